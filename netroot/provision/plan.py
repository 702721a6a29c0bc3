"""What a provision run will do, as data: playbook, limit, extra vars, check/diff (pure).

Built and checked before anything connects to a host: unknown targets, bad per-board values
and template problems all fail here, with the host and field named.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from netroot.errors import UsageError
from netroot.inventory import VERSION_RE, Inventory, InventoryError

NFS_VERSIONS = ("3", "4", "4.1", "4.2")
LAYERS = ("disk", "tmpfs")
POSITIVE_INTS = (
    "netroot_board_mount_retries",
    "netroot_board_mount_retry_delay",
    "netroot_board_mount_attempt_timeout",
    "netroot_board_mount_timeout",
    "netroot_board_stop_timeout",
)


@dataclass(frozen=True)
class RunPlan:
    """The inputs of one ansible-runner run."""

    playbook: str  # relative to playbooks/
    inventory: Path
    limit: tuple[str, ...]  # empty: every host
    extravars: Mapping[str, Any] = field(default_factory=dict)
    check: bool = False
    diff: bool = False
    servers: tuple[str, ...] = ()
    boards: tuple[str, ...] = ()
    # The vault password files that decrypted the inventory for netroot (as Ansible finds them,
    # the user's ansible.cfg included): the run, pointed at netroot's own ansible.cfg, gets them
    # so it decrypts the same values.
    vault_password_files: tuple[str, ...] = ()

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every host the run touches, servers first."""
        return self.servers + self.boards

    @property
    def cmdline(self) -> str:
        """ansible-playbook options that runner has no keyword for."""
        flags = [opt for opt, on in (("--check", self.check), ("--diff", self.diff)) if on]
        for secret in self.vault_password_files:
            flags.append(f"--vault-password-file {shlex.quote(secret)}")
        return " ".join(flags)

    def as_dict(self) -> dict[str, Any]:
        return {
            "playbook": self.playbook,
            "inventory": str(self.inventory),
            "limit": list(self.limit),
            "extravars": dict(self.extravars),
            "check": self.check,
            "diff": self.diff,
            "servers": list(self.servers),
            "boards": list(self.boards),
        }


def _bad(inventory: Inventory, host: str, key: str, value: Any, expected: str) -> InventoryError:
    return InventoryError(f"{inventory.path}: host {host}: {key} = {value!r}: expected {expected}")


def check_board_vars(inventory: Inventory, board: str) -> None:
    """The netroot_board_* values of one board, checked like the inventory model checks its own."""
    v = inventory.hosts[board].vars
    if "netroot_board_nfs_version" in v and str(v["netroot_board_nfs_version"]) not in NFS_VERSIONS:
        raise _bad(
            inventory,
            board,
            "netroot_board_nfs_version",
            v["netroot_board_nfs_version"],
            " or ".join(NFS_VERSIONS),
        )
    if "netroot_board_layer" in v and v["netroot_board_layer"] not in LAYERS:
        raise _bad(
            inventory, board, "netroot_board_layer", v["netroot_board_layer"], " or ".join(LAYERS)
        )
    for key in (
        "netroot_board_nfs_options",
        "netroot_board_nfs_extra_options",
        "netroot_board_nfs_version_profile",
    ):
        value = v.get(key, "")
        if not isinstance(value, str) or any(c.isspace() for c in value):
            raise _bad(inventory, board, key, value, "comma-separated mount options, no spaces")
        if "rw" in value.split(","):
            raise _bad(inventory, board, key, value, "no 'rw': the shared tree is mounted ro")
    for key in POSITIVE_INTS:
        value = v.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _bad(inventory, board, key, value, "a whole number >= 1")


def check_server_vars(inventory: Inventory, server: str) -> None:
    """The netroot_nfs_* values of the server, and its dnsmasq settings when a board netboots."""
    from netroot.netboot.dnsmasq import server_config

    mine = inventory.boards_of(server)  # dnsmasq on each server answers its own boards only
    if any(b.mode.served_over_tftp for b in mine):
        server_config(inventory.servers[server], mine)
    ids = inventory.hosts[server].vars.get("netroot_nfs_export_ids", {})
    if not isinstance(ids, Mapping) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 < i < 65536 for i in ids.values()
    ):
        raise _bad(
            inventory,
            server,
            "netroot_nfs_export_ids",
            ids,
            "a mapping image -> Export_Id (1..65535)",
        )


class PlanOptions(TypedDict, total=False):
    """build()'s keyword options, as `provision()` takes and forwards them."""

    all_hosts: bool
    versions: Mapping[str, str] | None
    extra_vars: Mapping[str, Any] | None
    check: bool
    diff: bool
    server_configured: bool


def build(
    inventory: Inventory,
    targets: list[str],
    *,
    all_hosts: bool = False,
    versions: Mapping[str, str] | None = None,
    extra_vars: Mapping[str, Any] | None = None,
    check: bool = False,
    diff: bool = False,
    server_configured: bool = False,
) -> RunPlan:
    """The run for `targets` (host/group names) or every host; versions: board -> version id.

    server_configured: the server's exports are known to list every board already (an earlier
    run of the same rollout did it), so its play only reads the exported versions.
    """
    if all_hosts == bool(targets):
        raise UsageError("name the hosts or groups to provision, or pass --all (not both)")
    if not inventory.servers:
        raise InventoryError(f"{inventory.path}: no host in group nfs_servers")
    hosts = inventory.expand(targets, all_hosts)
    boards = tuple(h for h in inventory.boards if h in hosts)
    # The servers named, and each board's own (its play reads that server's facts); another
    # server of the inventory is not touched (it may be down: its boards are not in this run).
    serving = {inventory.boards[b].server for b in boards} | set(hosts)
    servers = tuple(s for s in inventory.servers if s in serving)
    others = [h for h in hosts if h not in inventory.boards and h not in inventory.servers]
    if others:
        raise UsageError(
            f"{', '.join(others)}: neither a board nor an NFS server",
            "netroot provisions hosts of the groups boards and nfs_servers",
        )
    overrides = dict((extra_vars or {}).get("netroot_version_overrides", {}))
    for board, version in (versions or {}).items():
        if board not in boards:
            raise UsageError(f"version given for {board!r}, which is not a board of this run")
        if not VERSION_RE.match(version):
            raise UsageError(f"{board}: version {version!r} is not a version id (hex)")
        overrides[board] = version
    # A pinned board's version is decided here like any other, so the board role only ever
    # receives a decision (it falls back to the image's `current`, read on the server, only
    # for a board nobody decided for: the Python API called without versions).
    for board in boards:
        pin = inventory.boards[board].version
        if pin and board not in overrides:
            overrides[board] = pin
    for server in servers:
        check_server_vars(inventory, server)
    for board in boards:
        check_board_vars(inventory, board)
    extravars = {**(extra_vars or {})}
    if overrides:
        extravars["netroot_version_overrides"] = overrides
    # The server play always runs on the boards' servers: boards need its facts, and its
    # exports must list every board of that server before a new board can mount.
    playbook = "site.yml" if boards else "nfs_server.yml"
    if boards and server_configured:
        playbook = "boards.yml"
    limit = () if all_hosts else (*servers, *boards)
    return RunPlan(
        playbook, inventory.path, limit, extravars, check, diff, servers, boards,
        inventory.vault_password_files,
    )  # fmt: skip
