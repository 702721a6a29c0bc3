"""The inventory's model (hosts, boards, NFS servers) and netroot's checks on it (pure)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from netroot import bootmode, nfskind
from netroot.bootmode import BootMode
from netroot.errors import UsageError

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
MAC_RE = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
VERSION_RE = re.compile(r"^[0-9a-f]{12,64}$")
SERIAL_RE = re.compile(r"^[0-9a-f]{8}$")
BACKENDS = nfskind.NAMES
BOOT_MODES = bootmode.NAMES
# Boards of one server that reboot or switch at once, by default: its 1 GbE link carries about
# 125 MB/s, a Pi 3B's 100 Mb/s port takes up to about 12 MB/s, so about ten boards booting or
# importing a large library at once fill the server's link (docs/sizing.md).
REBOOT_BATCH = 10


class InventoryError(UsageError):
    """A bad inventory: names the file, host, field and what was expected."""


@dataclass(frozen=True)
class Host:
    name: str
    vars: Mapping[str, Any]
    groups: frozenset[str]
    # Where each variable is written (file:line), when Ansible knows: errors name it.
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ssh_key(self) -> str | None:
        key = self.vars.get("ansible_ssh_private_key_file")
        return str(key) if key else None


@dataclass(frozen=True)
class Board:
    """A board's netroot view: where it is and what it should run."""

    host: Host
    address: str  # the address the NFS server sees (exports are limited to it)
    image: str
    version: str | None  # pinned version id, if any
    qpu: bool  # a VideoCore IV is expected (Pi 3B)
    mac: str | None
    serial: str | None  # 8 lowercase hex digits: the name of its TFTP directory when netbooting
    boot: str = "sd"  # sd: boots its own card, mounts over NFS; netboot: no card, root on NFS
    # The nfs_servers host it mounts or boots from (netroot_nfs_server; "" only in an
    # inventory with no server at all, which every command that needs one refuses).
    server: str = ""

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def mode(self) -> BootMode:
        """How this board boots (netroot/bootmode): asked, never branched on by name."""
        return bootmode.of(self.boot)


@dataclass(frozen=True)
class NfsServer:
    host: Host
    export_root: str
    backend: str
    address: str  # the address boards mount from
    tftp_root: str = "/srv/netroot-tftp"  # netboot boards' boot files (dnsmasq's tftp-root)
    # netroot_export_remote: export_root is a path on the server, reached over SSH (rsync and
    # a helper there); false: a path on this control host (netroot runs on the server, or on
    # a host that mounts its export root).
    remote: bool = False
    # netroot_server_reboot_batch: at most this many of its boards reboot or switch at once.
    reboot_batch: int = 10
    home: bool = False  # netroot_fleet_home: the fleet state and the writer's lock live here

    @property
    def kind(self) -> nfskind.NfsKind:
        """Which NFS server it runs (netroot/nfskind.py): asked, never branched on by name."""
        return nfskind.of(self.backend)

    @property
    def name(self) -> str:
        return self.host.name


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: Mapping[str, Host]
    groups: Mapping[str, frozenset[str]]
    boards: Mapping[str, Board] = field(default_factory=dict)
    servers: Mapping[str, NfsServer] = field(default_factory=dict)
    # What the loader found suspicious but Ansible accepts (a key written twice, an unknown
    # netroot_* variable), each naming its file and line; also logged as warnings.
    warnings: tuple[str, ...] = ()
    # The vault password files that decrypted it (as Ansible found them), for the runs that
    # must decrypt the same values.
    vault_password_files: tuple[str, ...] = ()

    def expand(
        self, targets: list[str], all_hosts: bool = False, *, boards: bool = False
    ) -> list[str]:
        """Host names (board names with boards=True) named by host or group names, in
        inventory order; unknown names and empty groups are errors. The one target resolution
        every command uses."""
        pool = self.boards if boards else self.hosts
        kind = "board" if boards else "host"
        if all_hosts:
            return list(pool)
        picked: list[str] = []
        for target in targets:
            if target in pool:
                names = [target]
            elif target in self.groups:
                names = [h for h in pool if h in self.groups[target]]
                if not names:
                    raise UsageError(f"group {target!r} has no {kind}s", f"see {self.path}")
            else:
                raise UsageError(
                    f"no {kind} or group named {target!r} in {self.path}",
                    f"known {kind}s: " + (", ".join(pool) or "none"),
                )
            picked.extend(n for n in names if n not in picked)
        return picked

    def resolve(self, targets: list[str]) -> list[Board]:
        """Boards named by host or group names, in inventory order; unknown names are errors."""
        return [self.boards[n] for n in self.expand(targets, boards=True)]

    @property
    def server(self) -> NfsServer:
        """The fleet home: the server whose export root holds the fleet state and the
        writer's lock (the only server, or the one marked netroot_fleet_home, else the first
        in inventory order). A board's own server is `server_of(board)`."""
        if not self.servers:
            raise InventoryError(f"{self.path}: no host in group nfs_servers")
        marked = [s for s in self.servers.values() if s.home]
        return marked[0] if marked else next(iter(self.servers.values()))

    def server_of(self, board: Board | str) -> NfsServer:
        """The NFS server a board mounts or boots from (its netroot_nfs_server)."""
        found = self.boards[board] if isinstance(board, str) else board
        if found.server not in self.servers:
            raise InventoryError(f"{self.path}: no host in group nfs_servers")
        return self.servers[found.server]

    def boards_of(self, server: str) -> list[Board]:
        """The boards that hang off `server`, in inventory order."""
        return [b for b in self.boards.values() if b.server == server]

    def servers_for(self, boards: Iterable[Board]) -> list[NfsServer]:
        """The servers that serve these boards, in inventory order."""
        names = {b.server for b in boards}
        return [s for n, s in self.servers.items() if n in names]


def validate(
    path: Path, hosts: Mapping[str, Host], groups: Mapping[str, frozenset[str]]
) -> Inventory:
    """netroot's checks on the merged inventory (every variable already as Ansible gives it);
    every error names the inventory, the host, the variable and what was expected."""
    boards = {n: _board(h, path) for n, h in hosts.items() if "boards" in h.groups}
    servers = {n: _server(h, path) for n, h in hosts.items() if "nfs_servers" in h.groups}
    boards = _place_boards(boards, servers, path)
    _check_one_home(servers, path)
    _check_unique_addresses(boards, path)
    _check_unique_ids(boards, path)
    return Inventory(path=path, hosts=hosts, groups=groups, boards=boards, servers=servers)


def _field(host: Host, key: str, expected: str, value: Any, path: Path) -> InventoryError:
    """The error for a bad value: where it is written (file:line, else the inventory), the
    host, the variable, the value and what was expected."""
    where = host.origins.get(key) or str(path)
    hint = ""
    if expected == "true or false" and isinstance(value, str):
        # INI: a [group:vars] value is a string; netroot never guesses what "false" meant.
        hint = "in INI, put it on the host line as True/False, or in YAML (group_vars/)"
    return InventoryError(
        f"{where}: host {host.name}: {key} = {value!r}: expected {expected}", hint
    )


def _address(host: Host, key: str, path: Path) -> str:
    value = host.vars.get(key, host.vars.get("ansible_host"))
    try:
        return str(ipaddress.ip_address(str(value)))
    except ValueError:
        origin = host.origins.get(key if key in host.vars else "ansible_host")
        named = replace(host, origins={key: origin} if origin else {})
        raise _field(named, key, "an IP address (exports are limited to it)", value, path) from None


def _board(host: Host, path: Path) -> Board:
    if not NAME_RE.match(host.name):
        expected = "lowercase letters, digits, '.', '_' or '-'"
        raise _field(host, "name", expected, host.name, path)
    image = host.vars.get("netroot_image", "raspbian")
    if not isinstance(image, str) or not NAME_RE.match(image):
        raise _field(host, "netroot_image", "an export name like 'raspbian'", image, path)
    version = host.vars.get("netroot_version")
    if version is not None and (not isinstance(version, str) or not VERSION_RE.match(version)):
        raise _field(host, "netroot_version", "a version id (hex) or nothing", version, path)
    qpu = host.vars.get("netroot_qpu", False)
    if not isinstance(qpu, bool):
        raise _field(host, "netroot_qpu", "true or false", qpu, path)
    mac = host.vars.get("netroot_mac")
    if mac is not None and (not isinstance(mac, str) or not MAC_RE.match(mac.lower())):
        raise _field(host, "netroot_mac", "a MAC like b8:27:eb:12:34:56", mac, path)
    serial = host.vars.get("netroot_serial")
    # YAML reads an all-digit serial as an int (and 0-led ones as octal): only a string is safe.
    if serial is not None and (not isinstance(serial, str) or not SERIAL_RE.match(serial.lower())):
        raise _field(
            host, "netroot_serial", "8 hex digits, quoted (last 8 of Serial in /proc/cpuinfo)",
            serial, path,
        )  # fmt: skip
    boot = host.vars.get("netroot_boot", bootmode.DEFAULT)
    if boot not in BOOT_MODES:
        raise _field(host, "netroot_boot", " or ".join(BOOT_MODES), boot, path)
    for key in bootmode.of(boot).required_vars:
        if host.vars.get(key) is None:
            raise _field(host, key, f"set: netroot_boot is {boot}", None, path)
    return Board(
        host=host,
        address=_address(host, "netroot_address", path),
        image=image,
        version=version,
        qpu=qpu,
        mac=mac.lower() if isinstance(mac, str) else None,
        serial=serial.lower() if isinstance(serial, str) else None,
        boot=str(boot),
    )


def _absolute(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("/") and ".." not in value.split("/")


def _server(host: Host, path: Path) -> NfsServer:
    root = host.vars.get("netroot_export_root", "/srv/netroot")
    if not _absolute(root):
        raise _field(host, "netroot_export_root", "an absolute path", root, path)
    backend = host.vars.get("netroot_nfs_backend", nfskind.DEFAULT)
    if backend not in BACKENDS:
        raise _field(host, "netroot_nfs_backend", " or ".join(BACKENDS), backend, path)
    tftp_root = host.vars.get("netroot_tftp_root", "/srv/netroot-tftp")
    if not _absolute(tftp_root):
        raise _field(host, "netroot_tftp_root", "an absolute path", tftp_root, path)
    remote = host.vars.get("netroot_export_remote", False)
    home = host.vars.get("netroot_fleet_home", False)
    for key, flag in (("netroot_export_remote", remote), ("netroot_fleet_home", home)):
        if not isinstance(flag, bool):
            raise _field(host, key, "true or false", flag, path)
    batch = host.vars.get("netroot_server_reboot_batch", REBOOT_BATCH)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        expected = f"a whole number >= 1 (boards of this server rebooting at once; {REBOOT_BATCH})"
        raise _field(host, "netroot_server_reboot_batch", expected, batch, path)
    return NfsServer(
        host=host,
        remote=remote,
        reboot_batch=batch,
        home=home,
        export_root=root.rstrip("/") or "/",
        backend=str(backend),
        address=_address(host, "netroot_nfs_address", path),
        tftp_root=tftp_root.rstrip("/") or "/",
    )


def _place_boards(
    boards: Mapping[str, Board], servers: Mapping[str, NfsServer], path: Path
) -> dict[str, Board]:
    """Each board on its server (netroot_nfs_server; the only server when there is one)."""
    only = next(iter(servers)) if len(servers) == 1 else None
    placed: dict[str, Board] = {}
    for name, board in boards.items():
        named = board.host.vars.get("netroot_nfs_server")
        if named is None and only is not None:
            named = only
        if named is None and servers:
            raise InventoryError(
                f"{path}: host {name}: netroot_nfs_server is not set, and the inventory has "
                f"{len(servers)} NFS servers ({', '.join(servers)})",
                "set netroot_nfs_server on each board (or its group) to the server it mounts from",
            )
        if named is not None and named not in servers:
            raise InventoryError(
                f"{path}: host {name}: netroot_nfs_server = {named!r}: expected a host of "
                f"group nfs_servers ({', '.join(servers) or 'none'})",
                "name the server this board mounts or boots from",
            )
        placed[name] = replace(board, server=str(named or ""))
    return placed


def _check_one_home(servers: Mapping[str, NfsServer], path: Path) -> None:
    marked = [n for n, s in servers.items() if s.home]
    if len(marked) > 1:
        raise InventoryError(
            f"{path}: hosts {', '.join(marked)}: netroot_fleet_home is true on several servers",
            "mark one: the fleet state and the writer's lock live on exactly one server",
        )


def _check_unique_addresses(boards: Mapping[str, Board], path: Path) -> None:
    seen: dict[str, str] = {}
    for board in boards.values():
        other = seen.setdefault(board.address, board.name)
        if other != board.name:
            raise InventoryError(
                f"{path}: host {board.name}: netroot_address {board.address} is also {other}'s",
                "each board needs its own address",
            )


def _check_unique_ids(boards: Mapping[str, Board], path: Path) -> None:
    """A MAC or a serial names one board: dnsmasq answers by MAC, the ROM reads by serial."""
    for key, attr in (("netroot_mac", "mac"), ("netroot_serial", "serial")):
        seen: dict[str, str] = {}
        for board in boards.values():
            value = getattr(board, attr)
            if value is None:
                continue
            other = seen.setdefault(value, board.name)
            if other != board.name:
                raise InventoryError(
                    f"{path}: host {board.name}: {key} {value} is also {other}'s",
                    f"each board needs its own {key}",
                )
