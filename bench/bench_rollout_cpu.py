"""Benchmark: controller CPU seconds per board per rollout, for 1, 3 (and 6) lab boards.

Everything a rollout costs on the control host except the boards' emulation: netroot itself,
Ansible, the smoke's pytest processes and ssh. Measured as the CPU time of the rollout's
whole process tree: this process makes itself a child subreaper, so the ssh ControlPersist
masters Ansible leaves behind are re-parented here and reaped (after they are stopped) into
RUSAGE_CHILDREN too. The QEMU boards are not descendants and are not counted.

For each size N: every board of the group back on version A (not measured), then B rolled
out to the N boards in one batch (`--canary 0 --batch 100%`, `--qpu skip`), measured.
Baseline in the same run: the CPU of `netroot status` over the same N boards (one SSH round
trip each), the floor of anything that talks to the boards.

Needs a running lab with at least max(--sizes) boards. Goal: <= 1.5 s per board at 6 boards.
Run: `.venv/bin/python bench/bench_rollout_cpu.py [--sizes 1,3] [--rounds 1]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench.children import become_subreaper, reap_orphans

IMAGE_A = "netroot-lab/raspbian:bookworm"
IMAGE_B = "netroot-lab/raspbian:bench-b"
NETROOT = [sys.executable, "-m", "netroot"]


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measured(inventory: Path, *args: str) -> tuple[float, float]:
    """(CPU seconds of the whole process tree, wall seconds) of one netroot command."""
    env = {**os.environ, "NO_COLOR": "1", "NETROOT_INVENTORY": str(inventory)}
    reap_orphans()
    cpu0, wall0 = _children_cpu(), time.monotonic()
    proc = subprocess.run([*NETROOT, "-q", *args], capture_output=True, text=True, env=env)
    wall = time.monotonic() - wall0
    reap_orphans()
    if proc.returncode != 0:
        sys.exit(f"netroot {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-800:]}")
    return _children_cpu() - cpu0, wall


def build_b() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {IMAGE_A}\nCOPY stamp /etc/netroot-bench-stamp\n")
        Path(tmp, "stamp").write_text("bench b\n")
        subprocess.run(
            ["docker", "build", "--pull=false", "--platform", "linux/arm/v7", "-q", "-t",
             IMAGE_B, tmp],
            check=True, capture_output=True,
        )  # fmt: skip


def inventory_with_groups(sizes: list[int], where: Path) -> Path:
    """A copy of the lab inventory with a group bench_N of the first N boards for each size."""
    from netroot import inventory, paths

    source = paths.lab_inventory()
    boards = list(inventory.load(source).boards)
    if len(boards) < max(sizes):
        sys.exit(f"the lab has {len(boards)} boards; start it with --boards {max(sizes)}")
    data = yaml.safe_load(source.read_text())
    children = data["all"]["children"]["boards"].setdefault("children", {}) or {}
    data["all"]["children"]["boards"]["children"] = children
    for n in sizes:
        children[f"bench_{n}"] = {"hosts": {b: None for b in boards[:n]}}
    path = where / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,3")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--one-by-one", action="store_true",
        help="also the default shape at the largest size: canary 1, then batches of 1",
    )  # fmt: skip
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    become_subreaper()
    build_b()
    rollout = ("--name", "raspbian", "--canary", "0", "--batch", "100%", "--yes", "--qpu", "skip")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        inv = inventory_with_groups(sizes, Path(tmp))
        for n in sizes:
            group = f"bench_{n}"
            best: tuple[float, float] | None = None
            for _ in range(args.rounds):
                measured(inv, "rollout", IMAGE_A, "--group", group, *rollout)
                cpu, wall = measured(inv, "rollout", IMAGE_B, "--group", group, *rollout)
                best = (cpu, wall) if best is None or cpu < best[0] else best
            assert best is not None
            base, _ = measured(inv, "status", group)
            rows.append({"boards": n, "cpu_s": round(best[0], 2), "wall_s": round(best[1], 1),
                         "cpu_s_per_board": round(best[0] / n, 2),
                         "baseline_status_cpu_s": round(base, 2),
                         "ratio_to_baseline": round(best[0] / base, 1)})  # fmt: skip
        if args.one_by_one:
            n, group = max(sizes), f"bench_{max(sizes)}"
            shape = (
                "--name",
                "raspbian",
                "--canary",
                "1",
                "--batch",
                "1",
                "--yes",
                "--qpu",
                "skip",
            )
            measured(inv, "rollout", IMAGE_A, "--group", group, *rollout)
            cpu, wall = measured(inv, "rollout", IMAGE_B, "--group", group, *shape)
            rows.append({"boards": n, "shape": "canary 1, batches of 1",
                         "cpu_s": round(cpu, 2), "wall_s": round(wall, 1),
                         "cpu_s_per_board": round(cpu / n, 2)})  # fmt: skip
        measured(inv, "rollout", IMAGE_A, "--group", "boards", *rollout)  # leave the lab on A
    print(f"{'boards':>6} {'cpu s':>8} {'wall s':>8} {'cpu s/board':>12} {'status cpu s':>13}")
    for r in rows:
        print(f"{r['boards']:>6} {r['cpu_s']:>8} {r['wall_s']:>8} {r['cpu_s_per_board']:>12} "
              f"{r.get('baseline_status_cpu_s', '-'):>13} "
              f"{r.get('shape', 'one batch')}")  # fmt: skip
    print(json.dumps({"goal_cpu_s_per_board_at_6": 1.5, "rounds": args.rounds, "rows": rows}))


if __name__ == "__main__":
    main()
