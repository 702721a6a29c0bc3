"""The lab network: a namespace with a bridge, the host's veth into it, taps for the boards."""

from __future__ import annotations

import contextlib
from pathlib import Path

from netroot.errors import NetrootError
from netroot.lab.plan import (
    BRIDGE,
    HOST_ADDRESS,
    HOST_VETH,
    NETNS,
    LabPlan,
    stable_mac,
)
from netroot.run import run

IP_HINT = "install iproute2: apt-get install iproute2 (and run as root)"


def _ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    cmd = ["ip", *(["-n", netns] if netns else []), *args]
    return run(cmd, check=check, hint=IP_HINT).stdout.decode()


def netns_exists(name: str = NETNS) -> bool:
    return Path("/run/netns", name).exists()


def link_exists(name: str, netns: str | None = None) -> bool:
    cmd = ["ip", *(["-n", netns] if netns else []), "link", "show", "dev", name]
    return run(cmd, check=False).returncode == 0


def create(plan: LabPlan) -> None:
    """Namespace, bridge (no STP delay), host veth at 10.77.0.1 and one tap per board."""
    if not netns_exists():
        _ip("netns", "add", NETNS)
    _ip("link", "set", "lo", "up", netns=NETNS)
    if not link_exists(BRIDGE, NETNS):
        _ip(
            "link",
            "add",
            BRIDGE,
            "type",
            "bridge",
            "stp_state",
            "0",
            "forward_delay",
            "0",
            netns=NETNS,
        )
    _ip("link", "set", BRIDGE, "up", netns=NETNS)
    if not link_exists(HOST_VETH):
        _ip(
            "link",
            "add",
            HOST_VETH,
            "type",
            "veth",
            "peer",
            "name",
            f"{HOST_VETH}-br",
            "netns",
            NETNS,
        )
        _ip("addr", "add", f"{HOST_ADDRESS}/{plan.prefixlen}", "dev", HOST_VETH)
        _ip("link", "set", HOST_VETH, "address", stable_mac(HOST_ADDRESS))
    _ip("link", "set", HOST_VETH, "up")
    _ip("link", "set", f"{HOST_VETH}-br", "master", BRIDGE, "up", netns=NETNS)
    for board in plan.all_boards:
        if not link_exists(board.tap, NETNS):
            _ip("tuntap", "add", "dev", board.tap, "mode", "tap", netns=NETNS)
        _ip("link", "set", board.tap, "master", BRIDGE, "up", netns=NETNS)


def add_tap(tap: str) -> None:
    """A tap on the lab bridge for a machine other than a board (the server VM)."""
    if not link_exists(tap, NETNS):
        _ip("tuntap", "add", "dev", tap, "mode", "tap", netns=NETNS)
    _ip("link", "set", tap, "master", BRIDGE, "up", netns=NETNS)


def attach_container(pid: int, veth: str, address: str, prefixlen: int) -> None:
    """Give a running container (by its init PID) an eth0 on the lab bridge at `address`,
    linked to `veth` on the bridge."""
    if link_exists(veth, NETNS):
        _ip("link", "del", veth, netns=NETNS)
    _ip(
        "link",
        "add",
        veth,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        str(pid),
        netns=NETNS,
    )
    _ip("link", "set", veth, "master", BRIDGE, "up", netns=NETNS)
    nsenter = ["nsenter", "-t", str(pid), "-n", "ip"]
    run([*nsenter, "link", "set", "eth0", "address", stable_mac(address)], hint=IP_HINT)
    run([*nsenter, "addr", "add", f"{address}/{prefixlen}", "dev", "eth0"], hint=IP_HINT)
    run([*nsenter, "link", "set", "eth0", "up"], hint=IP_HINT)
    run([*nsenter, "link", "set", "lo", "up"], hint=IP_HINT)


def destroy() -> list[str]:
    """Remove the namespace (taking bridge, taps and veth peers with it) and the host veth."""
    removed = []
    if link_exists(HOST_VETH):
        _ip("link", "del", HOST_VETH, check=False)
        removed.append(HOST_VETH)
    if netns_exists():
        _ip("netns", "del", NETNS)
        removed.append(f"netns {NETNS}")
    return removed


def qemu_prefix() -> list[str]:
    """Run a command inside the lab namespace (qemu opens its tap there)."""
    if not netns_exists():
        raise NetrootError(f"network namespace {NETNS} is missing", "run `netroot lab up`")
    return ["ip", "netns", "exec", NETNS]


def tap_exists(tap: str) -> bool:
    with contextlib.suppress(NetrootError):
        return link_exists(tap, NETNS)
    return False
