"""The lab's record of what it started (lab_dir/state.json) and its status report (pure)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class HostStatus:
    """One lab host as `lab status` reports it."""

    name: str
    role: str  # "server", "board" or "diskless" (booted by provision, so not needed for `up`)
    address: str
    pid: int | None
    running: bool
    ssh: bool  # sshd answered with an SSH banner
    rss_mib: float | None = None


@dataclass(frozen=True)
class LabStatus:
    network: bool
    hosts: tuple[HostStatus, ...]
    inventory: str
    boards_planned: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def up(self) -> bool:
        """Everything the lab should have is there and answering SSH."""
        boards = [h for h in self.hosts if h.role == "board"]
        diskless = [h for h in self.hosts if h.role == "diskless"]
        return (
            self.network
            and len(boards) == self.boards_planned
            and bool(boards or diskless)
            and all(h.running and h.ssh for h in self.hosts if h.role != "diskless")
        )

    @property
    def anything_running(self) -> bool:
        return self.network or any(h.running for h in self.hosts)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["up"] = self.up
        return data


def save(
    path: Path,
    boards: int,
    export_root: Path,
    arch: str = "armhf",
    netboot: int = 0,
    server: str = "ganesha",
    servers: int = 1,
    arm64: int = 0,
    board_kind: str = "qemu",
) -> None:
    """Record the lab's size, arch, servers (kind and number) and export root (processes are
    found by their pidfiles)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    record = {
        "boards": boards,
        "export_root": str(export_root),
        "arch": arch,
        "netboot": netboot,
        "server": server,
        "servers": servers,
        "arm64": arm64,
        "board_kind": board_kind,
    }
    tmp.write_text(json.dumps(record, indent=2))
    tmp.rename(path)


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}
