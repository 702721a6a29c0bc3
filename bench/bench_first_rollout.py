"""The demo's first rollout on stock boards, before and after (not a test).

    flock /tmp/netroot-lab.lock .venv/bin/python -m bench.bench_first_rollout [--boards 3]
        [--pairs 1] [--base ed21039]

In a scratch lab home (the user's lab is never touched; a running lab is stopped first): N
boards booted and the lab image exported, then pairs of rounds, before then after. A round
first makes every board a stock board again (netroot's scripts, unit and assignment removed,
nothing mounted, config.txt as Bookworm ships it), then runs the README's rollout for a lab of
that size, `netroot rollout ... --canary 1 --batch 100%`:
  before  the same command from a `git worktree` of `--base` (the canary's first provision
          reboots it, then the batch's first provision reboots the others: two rounds);
  after   this tree (every stock board prepared at once first, one round of reboots, then
          the canary and the batch switch without a reboot).
Reported per side: the rollout's seconds, the number of reboot tasks and the longest one (a
reboot that stalls in QEMU shows there), medians and the after/before ratio. Prints JSON.
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
from bench.bench_reboot import _reboot_task_s
from bench.scratchlab import IMAGE, paired_rounds, scratch_lab

BASE = "ed21039"
# A stock board again: no netroot on it, nothing mounted, Bookworm's config.txt.
STOCK = (
    "sudo -n sh -c '/usr/local/sbin/netroot-mount --umount; "
    "systemctl disable --quiet netroot-mount.service; "
    "rm -f /etc/systemd/system/netroot-mount.service /usr/local/sbin/netroot-mount "
    "/usr/local/sbin/netroot-chroot /etc/netroot/assigned /run/netroot/mounted; "
    "systemctl daemon-reload; "
    'sed -i -e "/^# BEGIN netroot qpu boot config$/,/^# END netroot qpu boot config$/d" '
    '-e "s/^#netroot-qpu: //" /boot/firmware/config.txt\''
)


def _reboots(runs: list[Path]) -> list[float]:
    """Every "Reboot for the new boot config" task's seconds in these provision runs."""
    return sorted(s for run_dir in runs for s in _reboot_task_s(run_dir).values())


def _round(
    env: dict[str, str], pythonpath: Path | None, addresses: list[str], scratch: Path
) -> dict[str, Any]:
    for address in addresses:
        _ssh(scratch, address, STOCK)
    side_env = dict(env)
    if pythonpath is not None:
        side_env["PYTHONPATH"] = str(pythonpath)
    runs = scratch / "provision" / "runs"
    seen = set(runs.iterdir()) if runs.is_dir() else set()
    argv = ["rollout", IMAGE, "--name", "raspbian", "--group", "boards", "--canary", "1",
            "--batch", "100%", "--yes"]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "netroot", *argv],
        env=side_env, cwd=pythonpath or REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = round(time.monotonic() - t0, 1)
    reboots = _reboots(sorted(set(runs.iterdir()) - seen))
    return {"rc": proc.returncode, "seconds": seconds, "reboot_tasks_s": reboots}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir (run events)")
    args = parser.parse_args()
    result: dict[str, Any] = {"boards": args.boards, "cores": os.cpu_count(), "base": args.base}
    with scratch_lab(args.boards, "first-rollout", keep=args.keep) as lab:
        result["rounds"] = paired_rounds(
            args.base, args.pairs, f"first rollout of {args.boards} stock boards",
            lambda path: _round(lab.env, path, lab.addresses, lab.home),
        )  # fmt: skip
    for side in ("before", "after"):
        rounds = [r for r in result["rounds"] if r["side"] == side and r["rc"] == 0]
        if rounds:
            result[f"{side}_median_rollout_s"] = statistics.median(r["seconds"] for r in rounds)
    before, after = result.get("before_median_rollout_s"), result.get("after_median_rollout_s")
    if before and after:
        result["after_over_before"] = round(after / before, 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
