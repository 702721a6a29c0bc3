"""Benchmark: rollout wall time for 1 board vs 3 boards on the virtual lab (ratio; goal <= 1.5).

Needs a running lab with 3 boards (`netroot lab up --boards 3`) and the lab image. Builds a
second image (the lab image plus one file), then alternates: every board back on version A,
roll B out to one board; every board back on A, roll B out to all three in one batch
(`--canary 0 --batch 100%`). Both runs switch and smoke the same way; only the board count
differs. Prints a table and JSON. Run: `.venv/bin/python bench/bench_rollout.py [--rounds N]`.

Baseline in the same run (the floor for the ratio on this host): a fixed CPU-bound job inside
the chroot (python3 started 5 times) on 1 board vs on the 3 boards at once. The boards are
emulated (TCG, one vCPU thread each): 3 of them on a 2-core host cannot all run at full speed,
so the board-side part of a rollout is slowed by about that ratio whatever netroot does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMAGE_A = "netroot-lab/raspbian:bookworm"
IMAGE_B = "netroot-lab/raspbian:bench-b"
NETROOT = [sys.executable, "-m", "netroot"]


def netroot(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([*NETROOT, "-q", *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"netroot {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-800:]}")
    return proc


def build_b() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {IMAGE_A}\nCOPY stamp /etc/netroot-bench-stamp\n")
        Path(tmp, "stamp").write_text("bench b\n")
        subprocess.run(
            ["docker", "build", "--pull=false", "--platform", "linux/arm/v7", "-q", "-t",
             IMAGE_B, tmp],
            check=True, capture_output=True,
        )  # fmt: skip


def back_on_a() -> None:
    netroot("rollout", IMAGE_A, "--name", "raspbian", "--group", "boards", "--canary", "0",
            "--batch", "100%", "--yes", "--qpu", "skip")  # fmt: skip


def timed_rollout(group: str) -> float:
    start = time.monotonic()
    netroot("rollout", IMAGE_B, "--name", "raspbian", "--group", group, "--canary", "0",
            "--batch", "100%", "--yes", "--qpu", "skip")  # fmt: skip
    return time.monotonic() - start


BOARD_JOB = "for i in 1 2 3 4 5; do /usr/local/sbin/netroot-chroot /usr/bin/python3 -c pass; done"


def board_job(boards: list[str]) -> float:
    """Wall time of BOARD_JOB run on every board in `boards` at once."""
    from concurrent.futures import ThreadPoolExecutor

    from netroot import inventory
    from netroot.adapters.ssh import Session
    from netroot.sshtarget import target_for

    inv = inventory.load(None)
    sessions = [Session(target_for(b.host)) for b in inv.resolve(boards)]
    for s in sessions:
        s.run("true", timeout=60)  # connected before the clock starts
    start = time.monotonic()
    with ThreadPoolExecutor(len(sessions)) as pool:
        results = list(pool.map(lambda s: s.run(BOARD_JOB, timeout=600), sessions))
    took = time.monotonic() - start
    for s in sessions:
        s.close()
    if any(r.rc != 0 for r in results):
        sys.exit(f"the board job failed: {[r.stderr for r in results]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    build_b()
    ones: list[float] = []
    threes: list[float] = []
    job_ones: list[float] = []
    job_threes: list[float] = []
    for _ in range(args.rounds):
        back_on_a()
        ones.append(timed_rollout("pi-01"))
        back_on_a()
        threes.append(timed_rollout("boards"))
        job_ones.append(board_job(["pi-01"]))
        job_threes.append(board_job(["pi-01", "pi-02", "pi-03"]))
    one, three = min(ones), min(threes)
    job_one, job_three = min(job_ones), min(job_threes)
    result = {"one_board_s": round(one, 1), "three_boards_s": round(three, 1),
              "ratio": round(three / one, 2), "goal": 1.5, "rounds": args.rounds,
              "board_job_one_s": round(job_one, 1), "board_job_three_s": round(job_three, 1),
              "board_job_ratio": round(job_three / job_one, 2)}  # fmt: skip
    print(f"{'rollout 1 board':<34}{one:8.1f} s")
    print(f"{'rollout 3 boards':<34}{three:8.1f} s")
    print(f"{'ratio 3/1':<34}{three / one:8.2f}   (goal <= 1.5)")
    print(f"{'baseline: board job, 1 board':<34}{job_one:8.1f} s")
    print(f"{'baseline: board job, 3 at once':<34}{job_three:8.1f} s")
    print(f"{'baseline ratio 3/1 (the floor)':<34}{job_three / job_one:8.2f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
