"""A board's first provision (its config.txt changes: one reboot), before and after (not a test).

    flock /tmp/netroot-lab.lock .venv/bin/python -m bench.bench_reboot [--boards 2] [--pairs 2]
        [--base 8e628fb]

In a scratch lab home (the user's lab is never touched; a running lab is stopped first): N
boards booted and the lab image exported, then pairs of rounds, before then after. A round
first makes every board a board that was never provisioned as far as the cost goes: its
config.txt put back as Bookworm ships it (so the provision must change it and reboot) and its
version unmounted (netroot-mount stopped), then `netroot provision boards`:
  before  the same command from a `git worktree` of `--base` (its netroot and its playbooks:
          the version mounted first and again by the reboot; `systemctl reboot` looked up on
          the board with Ansible's find module);
  after   this tree (the boot config first, the version mounted once, by the reboot; the
          reboot command an absolute path).
Reported per side: the whole command's seconds and each board's "Reboot for the new boot
config" task seconds (from the run's own Ansible events); medians and after/before ratios.
Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.bench_batch import REPO
from bench.bench_boot import _ssh
from bench.scratchlab import paired_rounds, scratch_lab

BASE = "8e628fb"
# Bookworm's config.txt again, and nothing mounted: what a first provision finds.
RESET = (
    "sudo -n sed -i -e '/^# BEGIN netroot qpu boot config$/,/^# END netroot qpu boot config$/d'"
    " -e 's/^#netroot-qpu: //' /boot/firmware/config.txt"
    " && sudo -n systemctl stop netroot-mount.service"
)
TASK = "Reboot for the new boot config"


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


def _round(
    env: dict[str, str], pythonpath: Path | None, addresses: list[str], scratch: Path
) -> dict[str, Any]:
    for address in addresses:
        _ssh(scratch, address, RESET)
    side_env = dict(env)
    if pythonpath is not None:
        side_env["PYTHONPATH"] = str(pythonpath)
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "netroot", "provision", "boards", "--json"],
        env=side_env, cwd=pythonpath or REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = round(time.monotonic() - t0, 1)
    latest = max((scratch / "provision" / "runs").iterdir())
    return {"rc": proc.returncode, "seconds": seconds, "reboot_task_s": _reboot_task_s(latest)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir (run events)")
    args = parser.parse_args()
    result: dict[str, Any] = {"boards": args.boards, "cores": os.cpu_count(), "base": args.base}
    with scratch_lab(args.boards, "reboot", keep=args.keep) as lab:
        result["rounds"] = paired_rounds(
            args.base, args.pairs, "provision boards (config.txt stock, unmounted)",
            lambda path: _round(lab.env, path, lab.addresses, lab.home),
        )  # fmt: skip
    for side in ("before", "after"):
        rounds = [r for r in result["rounds"] if r["side"] == side and r["rc"] == 0]
        reboots = [s for r in rounds for s in r["reboot_task_s"].values()]
        if rounds:
            result[f"{side}_median_provision_s"] = statistics.median(r["seconds"] for r in rounds)
        if reboots:
            result[f"{side}_median_reboot_task_s"] = statistics.median(reboots)
    for what in ("provision", "reboot_task"):
        before, after = result.get(f"before_median_{what}_s"), result.get(f"after_median_{what}_s")
        if before and after:
            result[f"after_over_before_{what}"] = round(after / before, 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
