"""One rollout batch on the virtual lab, and its smoke alone: before vs after, in one run (not a
test; ratios, not seconds, carry over).

    .venv/bin/python -m bench.bench_batch [--part smoke|batch|both] [--pairs 2] [--base REV]

On a running lab of SD boards (`netroot lab up --boards 3`); run it under the lab lock. `--part
smoke` alone needs the boards provisioned and mounted (any rollout); `both` runs the batch
first, which leaves them so. The two sides always run in turn, A B A B, `--pairs` times, on the
same boards in the same run, and the ratio is the median of the pairs' after/before.

smoke: the built-in checks of every board at once in one pytest process, as `netroot smoke`
runs them (collected once, a forked worker per board). Before: bench/baseline/
smoke_checks_before.py, the checks as they were (a command or two per check, python3 started
four times per board); after: netroot/smoke/checks/test_netroot_builtin.py (one in-version
probe, one python3). Also counts what each side sends per board.

batch: `netroot rollout IMAGE --canary 0 --batch 100% --qpu skip --yes`: every board in one
batch (export reused, provision: the board role's apply script, then the smoke). Before: the
same command from a `git worktree` of `--base` (default: the commit this work started from,
dcc5b9c), run with PYTHONPATH at it, so its netroot, its playbooks and its smoke checks; after:
this checkout. Two images that differ by one file are rolled out in turn, so every timed
rollout switches every board to the other version (never a no-op), and both sides pay the same
switch. The first rollout of each side is a warm-up (untimed): it also rewrites the board's
scripts to its side's.

Measured 2026-12-05 (`--pairs 1`, 2-core machine shared with other jobs, 3 armhf boards under
TCG, freshly booted lab, Ganesha): one batch (provision + smoke of 3 boards, each switched to
another version) before 72.4 s, after 48.9 s, after/before 0.68 (one pair); the built-in checks
of the 3 boards alone before 34.0 and 27.2 s, after 9.4 and 8.8 s, after/before 0.30 (median of
two pairs); commands per board 12 in the version + 3 on the board before, 1 + 1 after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.bench_servers import _fresh_image
from netroot import paths
from netroot.inventory import load
from netroot.smoke.stages import BUILTIN_CHECKS

REPO = Path(__file__).resolve().parents[1]
BEFORE_CHECKS = REPO / "bench" / "baseline" / "smoke_checks_before.py"
BASE = "dcc5b9c"
FAST = ("--qpu", "skip", "--yes", "--canary", "0", "--batch", "100%", "--group", "lab")


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _env(pythonpath: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "NETROOT_INVENTORY": str(paths.lab_inventory()), "NO_COLOR": "1"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def _timed(cmd: list[str], env: dict[str, str], cwd: Path = REPO) -> tuple[float, str]:
    """`cmd`'s seconds and stdout; run in `cwd`, which `python -m`/`-c` put first on sys.path."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-2500:]
        sys.exit(f"{' '.join(cmd[:6])}...: exit {proc.returncode}\n{tail}")
    return seconds, proc.stdout


def _smoke_cmd(checks: Path, boards: list[str], counts: Path) -> list[str]:
    """The pytest run `netroot smoke` makes (netroot/smoke/stages.py), plus a counter."""
    return [
        sys.executable, "-m", "pytest", "-p", "netroot.smoke.plugin", "-p", "bench.bench_batch",
        "-p", "no:cacheprovider", "-q", "--capture=sys", "--netroot-workers",
        "--rootdir", str(counts.parent), "-c", str(counts.parent / "pytest.ini"),
        "--hosts=" + ",".join(f"netroot://{b}" for b in boards),
        f"--ansible-inventory={paths.lab_inventory()}", str(checks),
    ]  # fmt: skip


def pytest_configure(config: Any) -> None:
    """Loaded with -p bench.bench_batch in the smoke's pytest: each worker appends the
    commands its board's checks send (in the version, on the board) to $BENCH_COUNTS."""
    out = os.environ.get("BENCH_COUNTS")
    if not out:
        return
    from netroot.smoke import backend

    run, on_board = backend.NetrootBackend.run, backend.NetrootBackend.run_on_board

    def counted_run(self: Any, command: str, *args: str, **kwargs: Any) -> Any:
        with open(out, "a") as f:
            f.write(json.dumps([self.board.name, "in_version"]) + "\n")
        return run(self, command, *args, **kwargs)

    def counted_on_board(self: Any, command: str) -> Any:
        with open(out, "a") as f:
            f.write(json.dumps([self.board.name, "on_board"]) + "\n")
        return on_board(self, command)

    backend.NetrootBackend.run = counted_run  # type: ignore[method-assign]
    backend.NetrootBackend.run_on_board = counted_on_board  # type: ignore[method-assign]


def _smoke_once(checks: Path, boards: list[str]) -> tuple[float, dict[str, int]]:
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        counts = Path(tmp) / "counts.jsonl"
        (Path(tmp) / "pytest.ini").write_text("[pytest]\n")
        env = {**_env(), "BENCH_COUNTS": str(counts), "PYTHONPATH": str(REPO)}
        seconds, _ = _timed(_smoke_cmd(checks, boards, counts), env)
        sent: Counter[str] = Counter()
        for line in counts.read_text().splitlines():
            _board, where = json.loads(line)
            sent[where] += 1
    return seconds, {k: v // len(boards) for k, v in sent.items()}


def _pairs(before: Any, after: Any, pairs: int) -> dict[str, Any]:
    b_s, a_s = [], []
    for i in range(pairs):
        b_s.append(before())
        a_s.append(after())
        _log(f"pair {i + 1}: before {b_s[-1]:.1f} s, after {a_s[-1]:.1f} s")
    ratios = [a / b for a, b in zip(a_s, b_s, strict=True)]
    return {
        "before_s": [round(x, 1) for x in b_s],
        "after_s": [round(x, 1) for x in a_s],
        "before_median_s": round(statistics.median(b_s), 1),
        "after_median_s": round(statistics.median(a_s), 1),
        "after_over_before": round(statistics.median(ratios), 2),
    }


def bench_smoke(boards: list[str], pairs: int) -> dict[str, Any]:
    sent: dict[str, dict[str, int]] = {}

    def side(name: str, checks: Path) -> Any:
        def run() -> float:
            seconds, sent[name] = _smoke_once(checks, boards)
            return seconds

        return run

    out = _pairs(side("before", BEFORE_CHECKS), side("after", BUILTIN_CHECKS), pairs)
    return {**out, "commands_per_board": sent}


@contextlib.contextmanager
def _worktree(rev: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bench-batch-base-") as tmp:
        path = Path(tmp) / "base"
        git = ["git", "-C", str(REPO)]
        subprocess.run([*git, "worktree", "add", "--detach", str(path), rev], check=True,
                       capture_output=True)  # fmt: skip
        try:
            found = subprocess.run(
                [sys.executable, "-c", "import netroot; print(netroot.__file__)"],
                env=_env(path), cwd=path, capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            if not found.startswith(str(path)):
                sys.exit(f"PYTHONPATH={path} still imports netroot from {found.strip()}")
            yield path
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(path)], check=False)


def bench_batch(base: str, pairs: int) -> dict[str, Any]:
    images = [_fresh_image("bench-batch-a"), _fresh_image("bench-batch-b")]
    turn = iter(range(1_000_000))

    def rollout(pythonpath: Path | None) -> float:
        image = images[next(turn) % 2]  # every rollout switches every board
        cmd = [sys.executable, "-m", "netroot", "rollout", image, "--name", "raspbian", *FAST]
        return _timed(cmd, _env(pythonpath), pythonpath or REPO)[0]

    with _worktree(base) as old:
        _log("warm-up: before, then after (untimed)")
        rollout(old)
        rollout(None)
        out = _pairs(lambda: rollout(old), lambda: rollout(None), pairs)
    return {"base": base, **out}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("smoke", "batch", "both"), default="both")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--base", default=BASE)
    args = ap.parse_args()
    boards = sorted(load(paths.lab_inventory()).expand(["lab"], False))
    out: dict[str, Any] = {"boards": boards}
    # The batch first: its rollouts leave every board provisioned and mounted for the smoke.
    if args.part in ("batch", "both"):
        out["batch"] = bench_batch(args.base, args.pairs)
        _log(f"batch: {json.dumps(out['batch'])}")  # kept if the next part is cut short
    if args.part in ("smoke", "both"):
        out["smoke"] = bench_smoke(boards, args.pairs + 1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
