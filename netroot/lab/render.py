"""What the lab writes for others: the Ansible inventory and known_hosts (pure)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from netroot.lab.plan import (
    ARM64_EXPORT,
    BOARD_USER,
    LIGHT_EXPORT,
    NETBOOT_EXPORT,
    SERVER_INTERFACE,
    SUBNET,
    BoardPlan,
    LabPlan,
    ServerPlan,
)


def _diskless(plan: LabPlan, power_cycle: Sequence[str]) -> dict[str, Any]:
    """The diskless boards: netboot from their server, powered on and off by the lab."""
    return {
        b.name: {
            **_served_by(plan, b),
            "ansible_host": b.address,
            "netroot_address": b.address,
            "netroot_image": NETBOOT_EXPORT,
            "netroot_qpu": False,
            "netroot_boot": "netboot",
            "netroot_mac": b.mac,
            "netroot_serial": b.serial,
            "netroot_cmdline_console": "console=ttyAMA0",
            "netroot_power_cycle_cmd": shlex.join([*power_cycle, b.name]),
        }
        for b in plan.netboot
    }


def _served_by(plan: LabPlan, board: BoardPlan) -> dict[str, str]:
    """Which server a board mounts or boots from: named only when there are several (one
    server is every board's by default)."""
    return {"netroot_nfs_server": plan.server_of(board).name} if len(plan.nfs) > 1 else {}


def _server(plan: LabPlan, srv: ServerPlan) -> dict[str, Any]:
    """One NFS server's host entry."""
    server: dict[str, Any] = {
        "ansible_host": srv.address,
        "netroot_nfs_backend": "ganesha",
        "netroot_export_root": str(srv.export_root),
        "netroot_nfs_address": srv.address,
    }
    if plan.server == "kernel":
        # A server of its own, as a Debian server is met: a sudo user, root refused. Its
        # export root is its own disk, a path on the server: exports, the fleet state and the
        # writer's lock go there over SSH (netroot.export.serverroot, netroot.fleet.where).
        server.update(
            ansible_user=plan.server_user,
            ansible_become=True,
            netroot_nfs_backend="kernel",
            netroot_export_remote=True,
        )
    if any(b.netboot for b in plan.boards_of(srv)):
        # No other DHCP server on the lab network: dnsmasq gives the diskless boards their
        # addresses too (each server its own boards' only); no switch port learning here, so
        # no reply delay.
        server.update(
            netroot_dnsmasq_interface=SERVER_INTERFACE,
            netroot_dnsmasq_network=str(SUBNET),
            netroot_dnsmasq_addresses=True,
            netroot_dnsmasq_reply_delay=0,
        )
    return server


def inventory(plan: LabPlan, power_cycle: Sequence[str] = ("false",)) -> dict[str, Any]:
    """The lab's inventory as data, in the shape of the lab contract.

    `power_cycle` is the command that power-cycles a diskless board, given its name last.
    """
    common = (
        f"-o UserKnownHostsFile={plan.known_hosts} -o StrictHostKeyChecking=yes"
        " -o IdentitiesOnly=yes"
    )
    mixed = bool(plan.arm64) and plan.arch != "arm64"
    boards = {
        b.name: {
            "ansible_host": b.address,
            "netroot_address": b.address,
            # A mixed lab's 64-bit boards take their image from their group (below).
            **(
                {}
                if mixed and b.arch == "arm64"
                else {"netroot_image": LIGHT_EXPORT if plan.light else "raspbian"}
            ),
            "netroot_qpu": False,
            # No VideoCore here, but the boot config is managed as on a real QPU board, so
            # that path (config.txt, reboot, back on its version) runs in the lab.
            "netroot_qpu_boot_config": True,
            # What provision writes into config.txt; an arm64 board's RAM is 1024 MiB less it.
            "netroot_gpu_mem": plan.gpu_mem,
            "netroot_mac": b.mac,
            **_served_by(plan, b),
            # A light board's userspace client (nfs-rs) speaks NFSv3 to Ganesha: its NFSv4.1
            # session setup is refused there (NFS4ERR_BADNAME), docs/lab.md.
            **({"netroot_board_nfs_version": 3} if plan.light else {}),
            # The kernel's boot_id is the host's, the same across a container's restarts: a
            # light board's reboot is told by the id its boot writes (images/light-board).
            **({"netroot_board_boot_id_command": "cat /run/netroot-boot-id"} if plan.light else {}),
        }
        for b in plan.boards
    }
    children: dict[str, Any] = {}
    wide = {b.name for b in plan.arm64} if mixed else set()
    armhf = {name: v for name, v in boards.items() if name not in wide}
    if armhf:
        children["lab"] = {"hosts": armhf}
    if mixed:
        # The 64-bit boards as a lab admin groups them: their own group runs the torch image
        # (torch exists for arm64 only), so each image's rollout names its group.
        # NFSv3 for their mounts: `import torch` opens about a thousand files, and over NFSv4 each
        # open costs an OPEN and a CLOSE unless the server grants a read delegation, which
        # NFS-Ganesha's VFS exports never do; over NFSv3 with the version's immutable profile
        # a warm import sends none (bench/README.md, "A version mounted as immutable").
        children["lab_arm64"] = {
            "vars": {"netroot_image": ARM64_EXPORT, "netroot_board_nfs_version": "3"},
            "hosts": {b.name: boards[b.name] for b in plan.arm64},
        }
    if plan.netboot:
        children["lab_netboot"] = {"hosts": _diskless(plan, power_cycle)}
    return {
        "all": {
            "vars": {
                "ansible_user": "root",
                "ansible_ssh_private_key_file": str(plan.key),
                "ansible_ssh_common_args": common,
                "ansible_python_interpreter": "/usr/bin/python3",
                "netroot_known_hosts": str(plan.known_hosts),
            },
            "children": {
                "nfs_servers": {"hosts": {srv.name: _server(plan, srv) for srv in plan.nfs}},
                # As a stock Raspberry Pi OS board: its imaging user, root through sudo.
                "boards": {
                    "vars": {"ansible_user": BOARD_USER, "ansible_become": True},
                    "children": children,
                },
            },
        }
    }


def inventory_yaml(plan: LabPlan, power_cycle: Sequence[str] = ("false",)) -> str:
    header = "# Written by `netroot lab up`; rewritten on every start of the lab.\n"
    data = inventory(plan, power_cycle)
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def known_hosts(host_keys: Mapping[str, tuple[str, str]]) -> str:
    """known_hosts lines from name -> (address, public key line) using the lab's own keys.

    The keys come from the files the lab generated for each host, never from the network, so a
    host answering with another key fails the check.
    """
    lines = []
    for name, (address, pub) in sorted(host_keys.items()):
        keytype, blob = pub.split()[:2]
        lines.append(f"{address},{name} {keytype} {blob}\n")
    return "".join(lines)
