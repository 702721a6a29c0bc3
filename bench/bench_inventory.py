"""What reading the inventory with Ansible's own code costs (not a test): seconds and ratios.

    .venv/bin/python -m bench.bench_inventory [--boards 100] [--runs 5]

Two inventories of BOARDS boards and one NFS server, written to a scratch directory: one YAML
file (group vars in it), and a directory (hosts.yml, group_vars/boards.yml, a host_vars/ file
per board, one value templated). Each is read by netroot's loader (`netroot.inventory.load`:
Ansible's InventoryManager, VariableManager and Templar, then netroot's checks), warm (ansible
already imported: the median of RUNS reads in this process) and cold (a fresh interpreter
that imports netroot.inventory and loads it, as one CLI command does: the median of 3), and,
for the file, warm and cold, by the loader before issue 35 (its own YAML walker:
bench/baseline/inventory_before.py). Prints JSON: seconds and the ratios new/old.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.baseline import inventory_before
from netroot.inventory import load

COLD = (
    "import sys, time\nt = time.perf_counter()\nfrom pathlib import Path\n"
    "from {module} import load\nload(Path(sys.argv[1]))\n"
    "print(time.perf_counter() - t)"
)


def _boards(n: int) -> dict[str, Any]:
    return {
        f"pi-{i:03d}": {"ansible_host": f"10.{i // 250}.{i % 250}.{10 + i % 200}"} for i in range(n)
    }


def write_file(root: Path, n: int) -> Path:
    data = {
        "all": {
            "vars": {"ansible_user": "pi"},
            "children": {
                "nfs_servers": {"hosts": {"srv": {"ansible_host": "10.99.0.2"}}},
                "boards": {"vars": {"netroot_image": "raspbian"}, "hosts": _boards(n)},
            },
        }
    }
    path = root / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def write_directory(root: Path, n: int) -> Path:
    inv = root / "inventory"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "host_vars").mkdir()
    boards = {name: None for name in _boards(n)}
    data = {"all": {"children": {"nfs_servers": {"hosts": {"srv": {"ansible_host": "10.99.0.2"}}},
                                 "boards": {"hosts": boards}}}}  # fmt: skip
    (inv / "hosts.yml").write_text(yaml.safe_dump(data))
    (inv / "group_vars" / "boards.yml").write_text(
        yaml.safe_dump({"netroot_image": "raspbian", "netroot_address": "{{ ansible_host }}"})
    )
    for name, hostvars in _boards(n).items():
        (inv / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump(hostvars))
    return inv


def _median(read: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        read()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _cold(path: Path, module: str = "netroot.inventory") -> float:
    times = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", COLD.format(module=module), str(path)],
                              capture_output=True, text=True, check=True)  # fmt: skip
        times.append(float(done.stdout.strip()))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="netroot-bench-inventory-") as scratch:
        root = Path(scratch)
        file, directory = write_file(root, args.boards), write_directory(root, args.boards)
        assert len(load(file).boards) == len(load(directory).boards) == args.boards
        before = _median(lambda: inventory_before.load(file), args.runs)
        warm = _median(lambda: load(file), args.runs)
        warm_dir = _median(lambda: load(directory), args.runs)
        cold, cold_dir = _cold(file), _cold(directory)
        cold_before = _cold(file, "bench.baseline.inventory_before")
    result = {
        "boards": args.boards,
        "runs": args.runs,
        "before_file_warm_s": round(before, 4),
        "before_file_cold_s": round(cold_before, 4),
        "file_warm_s": round(warm, 4),
        "file_cold_s": round(cold, 4),
        "directory_warm_s": round(warm_dir, 4),
        "directory_cold_s": round(cold_dir, 4),
        "ratio_file_warm": round(warm / before, 1),
        "ratio_file_cold": round(cold / cold_before, 1),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
