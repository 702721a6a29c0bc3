"""A fake fleet for the rollout's unit tests: inventory over a tmp export root, boards in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from netroot.fleet.facts import BoardFacts
from netroot.fleet.outcome import Outcome, Result
from netroot.inventory import Board, Inventory, parse


def inventory(root: Path, path: Path, boards: int = 3, pins: Mapping[str, str] = {}) -> Inventory:
    """An inventory whose NFS server exports `root`, with boards pi-01..pi-N."""
    hosts: dict[str, Any] = {}
    for i in range(1, boards + 1):
        name = f"pi-{i:02d}"
        hosts[name] = {"ansible_host": f"10.77.0.{10 + i}", "netroot_image": "raspbian"}
        if name in pins:
            hosts[name]["netroot_version"] = pins[name]
    data = {
        "all": {
            "children": {
                "nfs_servers": {
                    "hosts": {
                        "nfs-01": {"ansible_host": "10.77.0.2", "netroot_export_root": str(root)}
                    }
                },
                "boards": {"hosts": hosts},
            }
        }
    }
    return parse(data, path)


class FakeBoards:
    """Boards that mount what they are switched to; some fail a version's smoke, some are down."""

    def __init__(
        self,
        names: Sequence[str],
        running: str | None = None,
        bad: Mapping[str, str] = {},
        down: frozenset[str] = frozenset(),
    ) -> None:
        self.running: dict[str, str | None] = {n: running for n in names}
        self.bad = dict(bad)  # board -> version whose smoke fails there
        self.down = set(down)
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def switch(self, versions: Mapping[str, str], stagger: float) -> dict[str, Result]:
        self.calls.append(("switch", tuple(versions)))
        out: dict[str, Result] = {}
        for board, version in versions.items():
            if board in self.down:
                out[board] = (Outcome.UNREACHABLE, "timed out")
            else:
                self.running[board] = version
                out[board] = (Outcome.OK, "")
        return out

    def smoke(self, boards: Sequence[str], versions: Mapping[str, str]) -> dict[str, Result]:
        self.calls.append(("smoke", tuple(boards)))
        out: dict[str, Result] = {}
        for b in boards:
            if b in self.down:
                out[b] = (Outcome.UNREACHABLE, "timed out")
            elif self.bad.get(b) == self.running[b]:
                out[b] = (Outcome.FAILED, "test_user_check failed")
            else:
                out[b] = (Outcome.OK, "")
        return out

    def observe(self, boards: list[Board]) -> dict[str, BoardFacts | None]:
        return {
            b.name: None
            if b.name in self.down
            else BoardFacts(self.running[b.name], self.running[b.name])
            for b in boards
        }


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every path under `root` with its bytes (files) or link target (symlinks)."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "-> " + str(p.readlink())
        elif p.is_file():
            out[rel] = p.read_bytes()
        else:
            out[rel] = "dir"
    return out
