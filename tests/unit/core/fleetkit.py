"""A fake fleet for the rollout's unit tests: inventory over a tmp export root, boards in memory."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from netroot.fleet.boardfacts import BoardFacts
from netroot.fleet.outcome import Outcome, Result
from netroot.inventory import Board, Host, Inventory, parse
from netroot.rollout.plan import Step


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


def boards(names: Sequence[str], server_of: Mapping[str, str] = {}) -> list[Board]:
    """Inventory `Board` values named `names`, each on its server (default nfs-01)."""
    return [
        Board(Host(n, {}, frozenset({"boards"})), "", "raspbian", None, False, None, None,
              server=server_of.get(n, "nfs-01"))
        for n in names
    ]  # fmt: skip


def names(items: Sequence[Step] | Sequence[Board]) -> tuple[str, ...]:
    """The boards of steps (a batch) or of a wave of boards, by name."""
    return tuple((i.board if isinstance(i, Step) else i).name for i in items)


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

    def switch(self, steps: Sequence[Step], stagger: float) -> dict[str, Result]:
        self.calls.append(("switch", names(steps)))
        out: dict[str, Result] = {}
        for step in steps:
            board = step.board.name
            if board in self.down:
                out[board] = (Outcome.UNREACHABLE, "timed out")
            else:
                self.running[board] = step.to_version
                out[board] = (Outcome.OK, "")
        return out

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        self.calls.append(("smoke", names(steps)))
        out: dict[str, Result] = {}
        for b in names(steps):
            if b in self.down:
                out[b] = (Outcome.UNREACHABLE, "timed out")
            elif self.bad.get(b) == self.running[b]:
                out[b] = (Outcome.FAILED, "test_user_check failed")
            else:
                out[b] = (Outcome.OK, "")
        return out

    def prepare(self, boards: Sequence[Board]) -> dict[str, Result]:
        self.calls.append(("prepare", tuple(b.name for b in boards)))
        out: dict[str, Result] = {}
        for b in (board.name for board in boards):
            out[b] = (Outcome.UNREACHABLE, "timed out") if b in self.down else (Outcome.OK, "")
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


def stamped_image(where: Path, tag: str) -> str:
    """A tiny rootfs tar whose content (and so version) is `tag`'s."""
    from tests.unit.export.tarbuild import Spec, write_tar

    specs = [Spec("etc", "d", mode=0o755), Spec("etc/netroot-stamp", data=tag.encode())]
    return str(write_tar(where / f"{tag}.tar", specs))


def current_link(root: Path, image: str = "raspbian") -> str | None:
    """The version `current` points to under an export root (None: no current)."""
    try:
        return Path(os.readlink(root / image / "current")).name
    except OSError:
        return None


def rollout(
    fleet: Any, boards: FakeBoards, source: str, *, batch: int = 1, max_fail: str = "0",
    log: list[str] | None = None,
) -> Any:  # fmt: skip
    """A rollout of `source` to every board, as the CLI runs it (under the fleet's lock)."""
    from netroot.cli.source import open_source
    from netroot.rollout import runner
    from netroot.rollout.plan import Count
    from netroot.smoke.stage import SmokeSettings

    info, apply = open_source(source)
    say: Any = log.append if log is not None else lambda _m: None
    planned = runner.plan_rollout(
        fleet, fleet.inventory.resolve(["boards"]), info, "raspbian", 1, Count(batch, False),
        Count.parse(max_fail, "--max-fail"), 0.0, say, observe=boards.observe,
    )  # fmt: skip
    with fleet.locked("netroot rollout test"):
        return runner.run(
            fleet, planned, source, info, apply, "raspbian", SmokeSettings(qpu_mode="skip"), say,
            engine_fleet=boards,
        )  # fmt: skip


def open_control(tmp: Path, name: str, data: Mapping[str, Any], monkeypatch: Any) -> Any:
    """A control host's fleet: its own copy of the inventory `data` and its own export mirror."""
    import yaml

    from netroot.fleet.where import open_fleet
    from netroot.inventory import load

    work = tmp / name
    work.mkdir(exist_ok=True)
    monkeypatch.setenv("NETROOT_CACHE", str(work / "cache"))
    # Inventory order kept: the first server is the fleet home.
    (work / "inventory.yml").write_text(yaml.safe_dump(dict(data), sort_keys=False))
    return open_fleet(load(work / "inventory.yml"))


def netroot_cli(inv: Path, *args: str) -> Any:
    """`netroot -i INV ARGS...` as a user runs it (no colours, wide tables, no stdin)."""
    import subprocess
    import sys

    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "netroot", "-i", str(inv), *args],
        capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
