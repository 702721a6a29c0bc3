"""One NFS server against two, on the virtual lab (not a test; ratios from one run).

    .venv/bin/python -m bench.bench_servers [--part rollout|netboot|both] [--boards 3]
        [--netboot 2] [--server ganesha|kernel]

rollout: the lab with `--boards` SD boards and one server; every board on a fresh image
(untimed), then a timed rollout of another fresh image to every board in one batch
(`--canary 0 --batch 100%`, no QPU stage); then `lab up --servers 2` (the boards dealt out:
pi-01 nfs-01, pi-02 nfs-02, ...) and the same rollout of a third fresh image, timed. Each timed
rollout is a cold export (to one server's root, then to two) plus the same switch and smoke of
the same boards. Prints the two wall times and two/one.

netboot: `--netboot` diskless boards beside the SD boards (left idle), all served by nfs-01:
exported and provisioned (which powers them on), then power-cycled all at once, each timed from
power-on to its first SSH login (a boot storm: U-Boot's DHCP and TFTP, the kernel and
initramfs over TFTP, the NFS root); then with `--servers 2` (half of them served by nfs-02,
provisioned there) the same storm. Prints each board's time and slowest(two)/slowest(one).

What this lab can and cannot show: every server and board shares this host's two cores and
one in-memory bridge, so no server's link is ever the bottleneck here (it is on a real
1 GbE server with ten Pi 3Bs booting); the ratios measure what a second server costs or saves
in netroot's own work (exports, Ansible runs, dnsmasq/TFTP/NFS service), not link capacity.
Leaves the lab up (run it under the lab lock, with `lab down` after).

Measured 2026-12-05 (2-core machine, Ganesha, 3 boards, one run): rollout one server 52.5 s,
two servers 53.0 s, two/one 1.01; two diskless boards booting at once, power-on to SSH,
28.4/28.6 s from one server, 28.2/28.3 s split over two, slowest two/one 0.99. (The first
run stopped at the two-server rollout: pi-02, moved from nfs-01's mount to nfs-02, failed to
remount; `lab up` now unmounts a board whose server changes.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.bench_netboot import _power_on_to_ssh
from bench.labcmd import netroot_on_lab
from netroot.lab.host import service
from netroot.lab.plan import NETBOOT_IMAGE, RASPBIAN_IMAGE

FAST = ("--qpu", "skip", "--yes", "--canary", "0", "--batch", "100%")


def _quiet(msg: str) -> None:
    print(f"[lab] {msg}", file=sys.stderr, flush=True)


def _fresh_image(tag: str) -> str:
    """The lab image plus one file unique to this run: a version no server has yet."""
    ref = f"{RASPBIAN_IMAGE.rpartition(':')[0]}:{tag}"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {RASPBIAN_IMAGE}\nCOPY stamp /etc/bench\n")
        Path(tmp, "stamp").write_text(f"{tag} {time.time()}\n")
        subprocess.run(
            ["docker", "build", "--pull=false", "--platform", "linux/arm/v7", "-q", "-t", ref,
             tmp],
            check=True, capture_output=True,
        )  # fmt: skip
    return ref


def _rollout(image: str) -> float:
    """A rollout to the lab's SD boards (group `lab`; diskless boards are `lab_netboot`)."""
    return netroot_on_lab("rollout", image, "--name", "raspbian", "--group", "lab", *FAST)


def bench_rollout(boards: int, kind: str) -> dict[str, Any]:
    service.up(boards, _quiet, server_kind=kind)
    _rollout(_fresh_image("bench-servers-warm"))
    one = _rollout(_fresh_image("bench-servers-one"))
    service.up(boards, _quiet, server_kind=kind, servers=2)
    two = _rollout(_fresh_image("bench-servers-two"))
    return {"boards": boards, "one_server_s": round(one, 1), "two_servers_s": round(two, 1),
            "two_over_one": round(two / one, 2)}  # fmt: skip


def _storm(names: list[str]) -> dict[str, float]:
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        return dict(zip(names, pool.map(_power_on_to_ssh, names), strict=True))


def bench_netboot(boards: int, diskless: int) -> dict[str, Any]:
    names = [f"nb-{i:02d}" for i in range(1, diskless + 1)]
    service.up(boards, _quiet, netboot=diskless)
    netroot_on_lab("export", NETBOOT_IMAGE)
    netroot_on_lab("provision", "lab_netboot")
    one = _storm(names)
    # The boards moving to nfs-02 are powered off by `lab up`; provision serves and boots them.
    service.up(boards, _quiet, netboot=diskless, servers=2)
    netroot_on_lab("export", NETBOOT_IMAGE)  # to nfs-02 too (a no-op where it is)
    netroot_on_lab("provision", "lab_netboot")
    two = _storm(names)
    return {"diskless": diskless, "one_server_s": one, "two_servers_s": two,
            "slowest_two_over_one": round(max(two.values()) / max(one.values()), 2)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("rollout", "netboot", "both"), default="both")
    ap.add_argument("--boards", type=int, default=3)
    ap.add_argument("--netboot", type=int, default=2)
    ap.add_argument("--server", choices=("ganesha", "kernel"), default="ganesha")
    args = ap.parse_args()
    out: dict[str, Any] = {"server": args.server}
    if args.part != "rollout" and args.server != "ganesha":
        sys.exit("--part netboot: diskless boards are served by --server ganesha")
    if args.part in ("rollout", "both"):
        out["rollout"] = bench_rollout(args.boards, args.server)
        _quiet(f"rollout: {json.dumps(out['rollout'])}")  # kept if the next part is cut short
    if args.part in ("netboot", "both"):
        out["netboot"] = bench_netboot(args.boards, args.netboot)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
