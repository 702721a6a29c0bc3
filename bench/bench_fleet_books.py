"""Benchmark: the controller's own bookkeeping of a rollout as the fleet grows (no boards).

What netroot itself does per board in a rollout, apart from Ansible, ssh and the smoke: the
plan, the fleet state saved (fsynced JSON of every board) and the event log. The boards are
scripted (every switch and smoke answers at once, one board in ten fails its smoke and is
rolled back), so what is measured is how netroot's own cost grows with the fleet: CPU seconds
and bytes written per board at each size, as ratios to the smallest size in the same run. A
cost that grows linearly with the fleet has a ratio near 1 per board.

Run: `.venv/bin/python -m bench.bench_fleet_books [--sizes 6,25,50,100,400] [--batch 10]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from netroot.fleet.outcome import Outcome, Result
from netroot.fleet.state import load_state
from netroot.inventory import Board, Host
from netroot.rollout.engine import run_rollout
from netroot.rollout.plan import Count, Step, make_plan


class ScriptedBoards:
    """Boards that switch at once and smoke at once; every tenth fails the new version."""

    def __init__(self, names: Sequence[str]) -> None:
        self.bad = set(names[5::10])  # never the canary: a failed canary stops the rollout
        self.running = dict.fromkeys(names, "old")

    def switch(self, steps: Sequence[Step], stagger: float) -> dict[str, Result]:
        self.running.update({s.board.name: s.to_version for s in steps})
        return {s.board.name: (Outcome.OK, "") for s in steps}

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        return {
            b: (Outcome.FAILED, "test_user_check failed")
            if b in self.bad and self.running[b] == "new"
            else (Outcome.OK, "")
            for b in (s.board.name for s in steps)
        }

    def prepare(self, boards: Sequence[Board]) -> dict[str, Result]:
        return {b.name: (Outcome.OK, "") for b in boards}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def measure(size: int, batch: int) -> dict[str, float]:
    names = [f"pi-{i:03d}" for i in range(size)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        state = load_state(root)
        for n in names:
            st = state.board(n)
            st.assigned = "old"
            st.record_good("old")
        state.save()
        boards = [
            Board(Host(n, {}, frozenset()), "", "img", None, False, None, None) for n in names
        ]
        plan = make_plan(
            boards, dict.fromkeys(names, "old"), "new", canary=1,
            batch=Count(batch, False), max_fail=Count(size, False),
        )  # fmt: skip
        cpu, wrote = _cpu(), _written()
        run_rollout(plan, state, ScriptedBoards(names), "img:2")
        cpu, wrote = _cpu() - cpu, _written() - wrote
        events = len((root / ".netroot-events.jsonl").read_text().splitlines())
    return {"boards": size, "cpu_s": cpu, "bytes": wrote, "events": events}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="6,25,50,100,400")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="the median of this many runs")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for size in sizes:
        runs = sorted(
            (measure(size, args.batch) for _ in range(args.rounds)), key=lambda r: r["cpu_s"]
        )
        rows.append(runs[len(runs) // 2])
    base = rows[0]
    per = {k: base[k] / base["boards"] for k in ("cpu_s", "bytes")}
    heads = ("boards", "cpu ms/board", "ratio", "KiB/board", "ratio", "events")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (6, 13, 6, 10, 6, 7), strict=True)))
    for r in rows:
        cpu, wrote = r["cpu_s"] / r["boards"], r["bytes"] / r["boards"]
        print(
            f"{r['boards']:>6} {cpu * 1e3:>13.2f} {cpu / per['cpu_s']:>6.2f} "
            f"{wrote / 1024:>10.1f} {wrote / per['bytes']:>6.2f} {r['events']:>7}"
        )
    json.dump({"batch": args.batch, "rows": rows}, sys.stderr)
    sys.stderr.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
