"""dnsmasq as proxy-DHCP + TFTP for netboot boards: its config as data, then as text (pure).

The boards are the inventory's netboot boards (`netroot_boot: netboot`), each answered by its
MAC (`netroot_mac`); a Pi 3B's MAC starts b8:27:eb. The text comes from templates/dnsmasq.conf.j2
(one copy, for the server role and for this code). Checking it with `dnsmasq --test` and
installing it is netroot.netboot.install's job.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from netroot.errors import UsageError
from netroot.inventory import Board
from netroot.provision.render import environment

TEMPLATE = "dnsmasq.conf.j2"
BOOT_MODES = ("sd", "netboot")
DEFAULT_REPLY_DELAY = 1  # seconds (dnsmasq allows 0-60)


@dataclass(frozen=True)
class NetbootHost:
    """One board dnsmasq answers."""

    name: str
    mac: str


@dataclass(frozen=True)
class ProxyConfig:
    """Everything the template needs."""

    interface: str
    network: ipaddress.IPv4Network  # the boards' subnet (the range proxy-DHCP serves)
    tftp_root: str
    boards: tuple[NetbootHost, ...]
    rom_workarounds: bool = True
    reply_delay: int = DEFAULT_REPLY_DELAY

    def variables(self) -> dict[str, Any]:
        """The template's variables, named as the server role will name them."""
        return {
            "netroot_dnsmasq_interface": self.interface,
            "netroot_dnsmasq_proxy_network": str(self.network.network_address),
            "netroot_dnsmasq_tftp_root": self.tftp_root,
            "netroot_dnsmasq_boards": [{"name": b.name, "mac": b.mac} for b in self.boards],
            "netroot_dnsmasq_rom_workarounds": self.rom_workarounds,
            "netroot_dnsmasq_reply_delay": self.reply_delay,
        }


def boot_mode(board: Board) -> str:
    """The board's `netroot_boot` (default sd); UsageError naming the board when it is wrong."""
    mode = board.host.vars.get("netroot_boot", "sd")
    if mode not in BOOT_MODES:
        raise UsageError(
            f"{board.name}: netroot_boot = {mode!r}, expected one of {', '.join(BOOT_MODES)}"
        )
    return str(mode)


def netboot_hosts(boards: Sequence[Board]) -> tuple[NetbootHost, ...]:
    """The netboot boards with their MACs; a netboot board without MAC or serial is refused."""
    hosts = []
    for board in boards:
        if boot_mode(board) != "netboot":
            continue
        for field, value in (("netroot_mac", board.mac), ("netroot_serial", board.serial)):
            if value is None:
                raise UsageError(
                    f"{board.name}: netroot_boot is netboot but {field} is not set",
                    "set the board's MAC (netroot_mac) and serial (netroot_serial: the last 8 "
                    "hex digits of 'Serial' in /proc/cpuinfo) in the inventory",
                )
        hosts.append(NetbootHost(board.name, str(board.mac)))
    return tuple(sorted(hosts, key=lambda h: h.name))


def proxy_config(
    boards: Sequence[Board],
    interface: str,
    network: str,
    tftp_root: str,
    *,
    rom_workarounds: bool = True,
    reply_delay: int = DEFAULT_REPLY_DELAY,
) -> ProxyConfig:
    """The config for the inventory's netboot boards, checked field by field."""
    try:
        net = ipaddress.IPv4Network(network, strict=False)
    except ValueError as exc:
        raise UsageError(f"netboot network {network!r}: {exc}") from None
    if not 0 <= reply_delay <= 60:
        raise UsageError(f"dhcp reply delay {reply_delay}: dnsmasq accepts 0 to 60 seconds")
    hosts = netboot_hosts(boards)
    if not hosts:
        raise UsageError("no board has netroot_boot: netboot", "set it on the diskless boards")
    return ProxyConfig(interface, net, tftp_root, hosts, rom_workarounds, reply_delay)


def render(config: ProxyConfig) -> str:
    """dnsmasq.conf text for `config`."""
    return environment().get_template(TEMPLATE).render(**config.variables())
