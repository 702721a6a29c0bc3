"""The reboot inside `netroot provision`: "back yet?" probes of 10 s vs 30 s (not a test).

    flock /tmp/netroot-lab.lock .venv/bin/python -m bench.bench_reboot [--boards 2] [--rounds 2]

In a scratch lab home (the user's lab is never touched; a running lab is stopped first): N
boards booted, the lab image exported, then rounds of: every board's config.txt put back as
Bookworm ships it (so the provision must change it and reboot), and `netroot provision boards`
with the reboot's probes at `netroot_board_reboot_connect_timeout` 10 s (the role's default,
Ansible's) or 30 s (what ansible.cfg now gives connections, for busy boards), alternating.
Each board's "Reboot for the new boot config" task duration comes from the run's own Ansible
events. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.bench_boot import NETROOT, _ssh

RESTORE = (
    "sudo -n sed -i -e '/^# BEGIN netroot qpu boot config$/,/^# END netroot qpu boot config$/d'"
    " -e 's/^#netroot-qpu: //' /boot/firmware/config.txt"
)
TASK = "Reboot for the new boot config"


def _say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _reboot_task_s(run_dir: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in run_dir.glob("artifacts/*/job_events/*.json"):
        event = json.loads(f.read_text())
        data = event.get("event_data") or {}
        res = data.get("res") or {}
        # The include that brings reboot.yml in has the same name: only the module says rebooted.
        if event.get("event") == "runner_on_ok" and data.get("task") == TASK and "rebooted" in res:
            out[str(data["host"])] = round(float(data.get("duration") or 0), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir (run events)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="netroot-bench-reboot-", dir="/var/tmp"))
    env = {**os.environ, "NETROOT_HOME": str(scratch), "NO_COLOR": "1"}
    plain = {k: v for k, v in os.environ.items() if k != "NETROOT_HOME"}
    subprocess.run([*NETROOT, "lab", "down"], env=plain, capture_output=True, check=False)
    result: dict[str, Any] = {"boards": args.boards, "cores": os.cpu_count(), "rounds": []}
    try:
        up = [*NETROOT, "lab", "up", "--boot", "--boards", str(args.boards)]
        subprocess.run(up, env=env, check=True, capture_output=True)
        subprocess.run(
            [*NETROOT, "export", "netroot-lab/raspbian:bookworm", "--name", "raspbian"],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        inventory = scratch / "lab" / "inventory.yml"
        data = yaml.safe_load(inventory.read_text())
        addresses = {
            name: host["ansible_host"]
            for name, host in data["all"]["children"]["boards"]["children"]["lab"]["hosts"].items()
        }
        long = scratch / "inventory-probe-30.yml"
        data["all"]["children"]["boards"]["vars"]["netroot_board_reboot_connect_timeout"] = 30
        long.write_text(yaml.safe_dump(data))
        runs = scratch / "provision" / "runs"
        for i in range(args.rounds * 2):
            probe = 10 if i % 2 == 0 else 30
            for address in addresses.values():
                _ssh(scratch, address, RESTORE)
            inv = inventory if probe == 10 else long
            _say(f"round {i // 2 + 1}: provision boards, probes {probe} s")
            proc = subprocess.run(
                [*NETROOT, "-i", str(inv), "provision", "boards", "--json"],
                env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            latest = max(runs.iterdir())
            result["rounds"].append(
                {"probe_s": probe, "rc": proc.returncode, "reboot_task_s": _reboot_task_s(latest)}
            )
    finally:
        subprocess.run([*NETROOT, "lab", "down"], env=env, capture_output=True, check=False)
    for probe in (10, 30):
        values = [
            s
            for r in result["rounds"]
            if r["probe_s"] == probe
            for s in r["reboot_task_s"].values()
        ]
        if values:
            result[f"median_reboot_task_s_probe_{probe}"] = statistics.median(values)
    if "median_reboot_task_s_probe_30" in result and "median_reboot_task_s_probe_10" in result:
        result["probe10_over_probe30"] = round(
            result["median_reboot_task_s_probe_10"] / result["median_reboot_task_s_probe_30"], 3
        )
    print(json.dumps(result, indent=2))
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
