"""What the smoke of one board costs the board (not a test): SSH round trips and seconds.

    .venv/bin/python -m bench.bench_smoke [--board pi-01] [--runs 3]

On a running lab (`netroot lab up`, the board provisioned). Runs netroot's built-in checks on
the board in this process, counting every command the checks send (in the chroot and on the
board itself), then the whole `netroot smoke BOARD` as a user runs it. The baseline, measured
in the same run on the same board: one privileged round trip on an open connection (`sudo -n
true`) and one new connection (key exchange, login, first command). Ratios: the checks' seconds
over one round trip; the whole smoke over one round trip. On a real Pi 3B a round trip is ~10x
cheaper than on an emulated board, so the ratios, not the seconds, carry over. Prints JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections import Counter
from typing import Any

import pytest

from bench.labcmd import netroot_on_lab
from netroot import paths
from netroot.adapters.ssh import Session
from netroot.inventory import load
from netroot.smoke import backend
from netroot.smoke.stages import BUILTIN_CHECKS
from netroot.sshtarget import target_for


def _baseline(board: str, runs: int) -> dict[str, float]:
    target = target_for(load(paths.lab_inventory()).resolve([board])[0].host)
    connects, trips = [], []
    for _ in range(runs):
        t0 = time.monotonic()
        with Session(target) as session:
            session.run_privileged("true", timeout=60)
            t1 = time.monotonic()
            session.run_privileged("true", timeout=60)
            trips.append(time.monotonic() - t1)
        connects.append(t1 - t0)
    return {"connect_s": statistics.median(connects), "round_trip_s": statistics.median(trips)}


class _Count:
    """Counts the commands the checks send, by where they run."""

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()

    def pytest_configure(self) -> None:
        run, on_board = backend.NetrootBackend.run, backend.NetrootBackend.run_on_board
        sent = self.sent

        def counted_run(self: Any, command: str, *args: str, **kwargs: Any) -> Any:
            sent["in_version"] += 1
            return run(self, command, *args, **kwargs)

        def counted_on_board(self: Any, command: str) -> Any:
            sent["on_board"] += 1
            return on_board(self, command)

        backend.NetrootBackend.run = counted_run  # type: ignore[method-assign]
        backend.NetrootBackend.run_on_board = counted_on_board  # type: ignore[method-assign]


def _checks(board: str) -> dict[str, Any]:
    count = _Count()
    inv = paths.lab_inventory()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the JSON only
        code = pytest.main(
            ["-q", "-s", "-p", "no:cacheprovider", "-p", "netroot.smoke.plugin",
             f"--hosts=netroot://{board}?ansible_inventory={inv}", str(BUILTIN_CHECKS)],
            plugins=[count],
        )  # fmt: skip
    seconds = time.monotonic() - t0
    if code != pytest.ExitCode.OK:
        raise SystemExit(f"the built-in checks failed on {board} (exit {code}): fix the lab first")
    return {"checks_s": seconds, "commands": dict(count.sent)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--board", default="pi-01")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = _baseline(args.board, args.runs)
    checks = _checks(args.board)
    smoke = statistics.median(netroot_on_lab("smoke", args.board) for _ in range(args.runs))
    trip = base["round_trip_s"]
    out = {
        "board": args.board,
        **{k: round(v, 3) for k, v in base.items()},
        "checks_commands": checks["commands"],
        "checks_s": round(checks["checks_s"], 2),
        "checks_over_round_trip": round(checks["checks_s"] / trip, 1),
        "smoke_s_median": round(smoke, 2),
        "smoke_over_round_trip": round(smoke / trip, 1),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
