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
from netroot.inventory import Board, NfsServer
from netroot.templating import environment

TEMPLATE = "dnsmasq.conf.j2"
DEFAULT_REPLY_DELAY = 1  # seconds (dnsmasq allows 0-60)


@dataclass(frozen=True)
class NetbootHost:
    """One board dnsmasq answers."""

    name: str
    mac: str
    serial: str = ""
    address: str = ""  # handed out only when dnsmasq gives addresses (ProxyConfig.addresses)


@dataclass(frozen=True)
class ProxyConfig:
    """Everything the template needs."""

    interface: str
    network: ipaddress.IPv4Network  # the boards' subnet (the range proxy-DHCP serves)
    tftp_root: str
    boards: tuple[NetbootHost, ...]
    rom_workarounds: bool = True
    reply_delay: int = DEFAULT_REPLY_DELAY
    addresses: bool = False  # also the boards' DHCP server (no other on the network: the lab)

    def variables(self) -> dict[str, Any]:
        """The template's variables, named as the server role names them."""
        return {
            "netroot_nfs_server_dnsmasq_interface": self.interface,
            "netroot_nfs_server_dnsmasq_network": str(self.network),
            "netroot_nfs_server_tftp_root": self.tftp_root,
            "netroot_nfs_server_dnsmasq_boards": [
                {"name": b.name, "mac": b.mac, "serial": b.serial, "address": b.address}
                for b in self.boards
            ],
            "netroot_nfs_server_dnsmasq_rom_workarounds": self.rom_workarounds,
            "netroot_nfs_server_dnsmasq_reply_delay": self.reply_delay,
            "netroot_nfs_server_dnsmasq_addresses": self.addresses,
        }


def netboot_hosts(boards: Sequence[Board]) -> tuple[NetbootHost, ...]:
    """The netboot boards with their MACs (the inventory made sure each has MAC and serial)."""
    hosts = [
        NetbootHost(b.name, str(b.mac), str(b.serial or ""), b.address)
        for b in boards
        if b.mode.served_over_tftp and b.mac
    ]
    return tuple(sorted(hosts, key=lambda h: h.name))


def proxy_config(
    boards: Sequence[Board],
    interface: str,
    network: str,
    tftp_root: str,
    *,
    rom_workarounds: bool = True,
    reply_delay: int = DEFAULT_REPLY_DELAY,
    addresses: bool = False,
) -> ProxyConfig:
    """The config for the inventory's netboot boards, checked field by field."""
    if not interface or any(c.isspace() for c in interface):
        raise UsageError(f"netboot interface {interface!r}: expected an interface name")
    try:
        if "/" not in network:
            raise ValueError("no prefix length")
        net = ipaddress.IPv4Network(network)
    except ValueError as exc:
        raise UsageError(
            f"netboot network {network!r}: {exc}", "the boards' subnet, like 10.88.0.0/24"
        ) from None
    if isinstance(reply_delay, bool) or not isinstance(reply_delay, int):
        raise UsageError(f"dhcp reply delay {reply_delay!r}: expected whole seconds")
    if not 0 <= reply_delay <= 60:
        raise UsageError(f"dhcp reply delay {reply_delay}: dnsmasq accepts 0 to 60 seconds")
    hosts = netboot_hosts(boards)
    if not hosts:
        raise UsageError("no board has netroot_boot: netboot", "set it on the diskless boards")
    if addresses:
        for host in hosts:
            _check_address(host, net)
    return ProxyConfig(interface, net, tftp_root, hosts, rom_workarounds, reply_delay, addresses)


def _check_address(host: NetbootHost, net: ipaddress.IPv4Network) -> None:
    """A board dnsmasq gives an address to needs one inside the network it serves."""
    try:
        inside = ipaddress.IPv4Address(host.address) in net
    except ValueError:
        inside = False
    if not inside:
        raise UsageError(
            f"{host.name}: address {host.address!r} is not in {net}",
            "dnsmasq gives netboot boards their netroot_address (or ansible_host): "
            "one inside netroot_dnsmasq_network",
        )


def server_config(server: NfsServer, boards: Sequence[Board]) -> ProxyConfig:
    """The config from the server's inventory vars; UsageError naming the host and the field."""
    v = server.host.vars
    rom = v.get("netroot_dnsmasq_rom_workarounds", True)
    addresses = v.get("netroot_dnsmasq_addresses", False)
    for field, value in (("rom_workarounds", rom), ("addresses", addresses)):
        if not isinstance(value, bool):
            raise UsageError(f"host {server.name}: netroot_dnsmasq_{field} = {value!r}: "
                             "expected true or false")  # fmt: skip
    try:
        return proxy_config(
            boards,
            str(v.get("netroot_dnsmasq_interface", "")),
            str(v.get("netroot_dnsmasq_network", "")),
            server.tftp_root,
            rom_workarounds=rom,
            reply_delay=v.get("netroot_dnsmasq_reply_delay", DEFAULT_REPLY_DELAY),
            addresses=addresses,
        )
    except UsageError as exc:
        names = ", ".join(h.name for h in netboot_hosts(boards))
        raise UsageError(
            f"host {server.name}: {exc.message}",
            exc.hint
            or f"boards netboot ({names}): set netroot_dnsmasq_interface (the "
            "interface facing them) and netroot_dnsmasq_network (their subnet) on the server",
        ) from None


def render(config: ProxyConfig) -> str:
    """dnsmasq.conf text for `config`."""
    return environment().get_template(TEMPLATE).render(**config.variables())
