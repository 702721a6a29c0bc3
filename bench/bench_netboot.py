"""Diskless boards' power-on to SSH-ready (not a test): one board alone vs N at once.

    .venv/bin/python -m bench.bench_netboot [--boards 3] [--rounds 1]

Brings the lab to 0 SD boards and N diskless ones (`lab up --boards 0 --netboot N`), exports
the netboot image and provisions them (dnsmasq, TFTP directories; the provision powers them on).
Then, per round: nb-01 is power-cycled alone and timed from power-on (QEMU started) to the
first SSH login as `pi` with the lab's key and known_hosts; then all N are power-cycled at once
(a boot storm: N U-Boots on DHCP/TFTP, N kernels fetching, N NFS roots mounted) and each is
timed the same way. Prints JSON on stdout: seconds per board, and the storm's slowest board
over the single board's time (same run, same machine). Leaves the lab up.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.labcmd import netroot_on_lab
from netroot import paths
from netroot.lab.host import service
from netroot.lab.host.ready import ssh_ok
from netroot.lab.plan import NETBOOT_IMAGE, netboot_plan


def _quiet(msg: str) -> None:
    print(f"[lab] {msg}", file=sys.stderr, flush=True)


def _power_on_to_ssh(name: str, timeout: float = 900.0) -> float:
    """Power-cycle `name` and wait for an SSH login; seconds from power-on."""
    lab_dir = paths.lab_dir()
    board = netboot_plan(int(name.removeprefix("nb-")))
    service.power_cycle(name, lambda _m: None)
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if ssh_ok(board.address, lab_dir / "id_ed25519", lab_dir / "known_hosts", "pi"):
            return round(time.monotonic() - t0, 1)
        time.sleep(1)
    sys.exit(f"{name}: not ssh-ready {timeout:.0f} s after power-on")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    service.up(0, _quiet, netboot=args.boards)
    netroot_on_lab("export", NETBOOT_IMAGE)
    netroot_on_lab("provision", "lab_netboot")
    names = [f"nb-{i:02d}" for i in range(1, args.boards + 1)]
    rounds: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        single = _power_on_to_ssh(names[0])
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            storm = dict(zip(names, pool.map(_power_on_to_ssh, names), strict=True))
        rounds.append(
            {
                "single_s": single,
                "storm_s": storm,
                "storm_slowest_over_single": round(max(storm.values()) / single, 2),
            }
        )
    print(json.dumps({"boards": args.boards, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
