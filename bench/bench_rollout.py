"""Benchmark: rollout wall time for 1 board vs 3 boards on the virtual lab (ratio; goal <= 1.5).

Needs a running lab with 3 boards (`netroot lab up --boards 3`) and the lab image. Builds a
second image (the lab image plus one file), then alternates: every board back on version A,
roll B out to one board; every board back on A, roll B out to all three in one batch
(`--canary 0 --batch 100%`). Both runs switch and smoke the same way; only the board count
differs. Prints a table and JSON. Run: `.venv/bin/python bench/bench_rollout.py [--rounds N]`.
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


def timed_rollout(group: str) -> float:
    start = time.monotonic()
    netroot("rollout", IMAGE_B, "--name", "raspbian", "--group", group, "--canary", "0",
            "--batch", "100%", "--yes", "--qpu", "skip")  # fmt: skip
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    build_b()
    ones: list[float] = []
    threes: list[float] = []
    for _ in range(args.rounds):
        netroot("rollout", IMAGE_A, "--name", "raspbian", "--group", "boards", "--canary", "0",
                "--batch", "100%", "--yes", "--qpu", "skip")  # fmt: skip
        ones.append(timed_rollout("pi-01"))
        netroot("rollout", IMAGE_A, "--name", "raspbian", "--group", "boards", "--canary", "0",
                "--batch", "100%", "--yes", "--qpu", "skip")  # fmt: skip
        threes.append(timed_rollout("boards"))
    one, three = min(ones), min(threes)
    result = {"one_board_s": round(one, 1), "three_boards_s": round(three, 1),
              "ratio": round(three / one, 2), "goal": 1.5, "rounds": args.rounds}  # fmt: skip
    print(f"{'rollout 1 board':<22}{one:8.1f} s")
    print(f"{'rollout 3 boards':<22}{three:8.1f} s")
    print(f"{'ratio 3/1':<22}{three / one:8.2f}   (goal <= 1.5)")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
