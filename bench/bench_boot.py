"""Where a lab board's boot goes under TCG: boot to ssh-ready, reboot to ssh-ready (not a test).

    flock /tmp/netroot-lab.lock .venv/bin/python -m bench.bench_boot [--boards 1] [--reboots 2]
    flock /tmp/netroot-lab.lock .venv/bin/python -m bench.bench_boot --base REV [--pairs 2]
        [--boards 3] [--reboots 3]

In a scratch lab home (the user's lab and its saved states are never touched; a running lab is
stopped first): `lab up --boot` of N boards, timed to "every board ssh-ready"; then on pi-01
systemd's own account (`systemd-analyze`, the slowest units, the chain to ssh.service); then
`systemctl reboot` through sudo, as netroot's provision does, timed until the board answers SSH
again with a new boot id, `--reboots` times. Prints JSON; the lab is stopped at the end.

With `--base`: pairs of scratch labs, before (started by a `git worktree` of REV: its kernel
image, its units) then after (this tree); in each, `lab up --boot` timed, then `--reboots`
rounds of every board rebooting at once (a lab's boot storm, as a first rollout's preparing
round makes it), each board timed to ssh-ready with a new boot id (one not back within LIMIT
counts as LIMIT, and the round goes on: a stalled reboot is data). Reported: per side the
medians of boot and of reboot seconds, the slowest reboot, and after/before ratios.
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
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NETROOT = [str(ROOT / ".venv" / "bin" / "netroot")]
LIMIT = 420.0  # a paired round's reboot not back by then counts as this (a lower bound)


def _say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _ssh(
    home: Path, address: str, command: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    from netroot.lab.host.ready import ssh_argv

    lab = home / "lab"
    argv = ssh_argv(address, lab / "id_ed25519", lab / "known_hosts", command, user="pi")
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _boot_id(home: Path, address: str) -> str | None:
    try:
        proc = _ssh(home, address, "cat /proc/sys/kernel/random/boot_id", timeout=40)
    except subprocess.TimeoutExpired:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def _reboot(home: Path, address: str, limit: float = 900) -> float:
    """Seconds from `systemctl reboot` to SSH with a new boot id; `limit` if not back by then."""
    before = _boot_id(home, address)
    t0 = time.monotonic()
    _ssh(home, address, "sudo -n systemctl reboot", timeout=60)
    while time.monotonic() - t0 < limit:
        now = _boot_id(home, address)
        if now and now != before:
            return time.monotonic() - t0
        time.sleep(1)
    _say(f"{address}: not back within {limit:.0f} s")
    return limit


def _lab_round(pythonpath: Path | None, boards: int, reboots: int) -> dict[str, Any]:
    """A scratch lab started by the netroot at `pythonpath` (None: this tree): boot, reboots."""
    scratch = Path(tempfile.mkdtemp(prefix="netroot-bench-boot-", dir="/var/tmp"))
    env = {**os.environ, "NETROOT_HOME": str(scratch), "NO_COLOR": "1"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    netroot = [sys.executable, "-m", "netroot"]
    cwd = pythonpath or ROOT
    try:
        t0 = time.monotonic()
        up = [*netroot, "lab", "up", "--boot", "--arm64", "0", "--boards", str(boards)]
        subprocess.run(up, env=env, cwd=cwd, check=True, capture_output=True)
        out: dict[str, Any] = {"boot_s": round(time.monotonic() - t0, 1)}
        from netroot.inventory import load

        inv = load(scratch / "lab" / "inventory.yml")
        addresses = [b.address for b in inv.boards.values()]
        out["reboot_s"] = []
        with ThreadPoolExecutor(len(addresses)) as pool:
            for _ in range(reboots):
                done = pool.map(lambda a: round(_reboot(scratch, a, LIMIT), 1), addresses)
                out["reboot_s"].append(list(done))
        return out
    finally:
        subprocess.run(
            [*netroot, "lab", "down"], env=env, cwd=cwd, capture_output=True, check=False
        )
        shutil.rmtree(scratch, ignore_errors=True)


def paired(base: str, pairs: int, boards: int, reboots: int) -> dict[str, Any]:
    from bench.bench_batch import _worktree

    result: dict[str, Any] = {"base": base, "boards": boards, "cores": os.cpu_count()}
    rounds: list[dict[str, Any]] = []
    with _worktree(base) as old:
        for i in range(pairs):
            for side, path in (("before", old), ("after", None)):
                _say(f"pair {i + 1}: {side}: lab up, {reboots} rounds of {boards} reboots")
                rounds.append({"side": side, **_lab_round(path, boards, reboots)})
                _say(f"  {rounds[-1]}")
    result["rounds"] = rounds
    for side in ("before", "after"):
        mine = [r for r in rounds if r["side"] == side]
        result[f"{side}_median_boot_s"] = statistics.median(r["boot_s"] for r in mine)
        seconds = [s for r in mine for storm in r["reboot_s"] for s in storm]
        result[f"{side}_median_reboot_s"] = statistics.median(seconds)
        result[f"{side}_slowest_reboot_s"] = max(seconds)
    for what in ("boot", "reboot"):
        before, after = result[f"before_median_{what}_s"], result[f"after_median_{what}_s"]
        result[f"after_over_before_{what}"] = round(after / before, 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=None, help="1 alone, 3 with --base")
    parser.add_argument("--reboots", type=int, default=None, help="2 alone, 3 with --base")
    parser.add_argument("--base", help="pairs against a lab started by this revision")
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    plain = {k: v for k, v in os.environ.items() if k != "NETROOT_HOME"}
    if args.base:
        subprocess.run([*NETROOT, "lab", "down"], env=plain, capture_output=True, check=False)
        boards, reboots = args.boards or 3, args.reboots or 3
        print(json.dumps(paired(args.base, args.pairs, boards, reboots), indent=2))
        return
    args.boards, args.reboots = args.boards or 1, args.reboots or 2
    scratch = Path(tempfile.mkdtemp(prefix="netroot-bench-boot-", dir="/var/tmp"))
    env = {**os.environ, "NETROOT_HOME": str(scratch), "NO_COLOR": "1"}
    subprocess.run([*NETROOT, "lab", "down"], env=plain, capture_output=True, check=False)
    result: dict[str, Any] = {"boards": args.boards, "cores": os.cpu_count()}
    try:
        t0 = time.monotonic()
        up = [*NETROOT, "lab", "up", "--boot", "--arm64", "0", "--boards", str(args.boards)]
        subprocess.run(up, env=env, check=True, capture_output=True)
        result["boot_to_ssh_ready_s"] = round(time.monotonic() - t0, 1)
        from netroot.inventory import load

        address = load(scratch / "lab" / "inventory.yml").boards["pi-01"].address
        for key, command in (
            ("systemd_analyze", "systemd-analyze time"),
            ("blame", "systemd-analyze blame --no-pager | head -15"),
            ("chain_to_ssh", "systemd-analyze critical-chain ssh.service --no-pager"),
        ):
            result[key] = _ssh(scratch, address, command).stdout.strip().splitlines()
        result["reboot_to_ssh_ready_s"] = [
            round(_reboot(scratch, address), 1) for _ in range(args.reboots)
        ]
        result["after_reboot_systemd_analyze"] = _ssh(
            scratch, address, "systemd-analyze time"
        ).stdout.strip()
    finally:
        subprocess.run([*NETROOT, "lab", "down"], env=env, capture_output=True, check=False)
    print(json.dumps(result, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
