"""The fleet's state, kept in the export root beside `NAME/versions`.

Each board's assigned and last good versions, its last smoke, and the rollout record live in
`ROOT/.netroot-fleet.json`, so every control host that works on the same export tree (the NFS
server itself, or a host that mounts its export root) sees the same fleet. It is replaced
atomically and durably (fsutil.atomic_write) every time a board changes, so an interrupted
rollout can be resumed, or rolled back, from any of them. A controller-local file of older
netroot versions (`.<inventory>.netroot-state.json` beside the inventory) is read when the
export root has none yet, and taken over (renamed aside) by the first write.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from netroot.errors import NetrootError
from netroot.fleet import events
from netroot.fleet.outcome import Outcome
from netroot.fsutil import append_lines, atomic_write
from netroot.remote.fleet import STATE_NAME  # the server-side helper writes the same files

HISTORY = 20


@dataclass
class BoardState:
    assigned: str | None = None  # the version a rollout or rollback decided the board runs
    last_good: str | None = None  # the last version that smoked green on it
    history: list[str] = field(default_factory=list)  # versions that smoked green, oldest first
    mounted: str | None = None  # what the last provision left mounted
    phase: str = "idle"  # idle | switching | smoking | an Outcome value
    smoke_status: str | None = None  # an Outcome value: ok | failed | unreachable
    smoke_time: float | None = None
    message: str = ""

    def record_good(self, version: str) -> None:
        self.last_good = version
        if not self.history or self.history[-1] != version:
            self.history.append(version)
        self.history = self.history[-HISTORY:]

    def previous_good(self) -> str | None:
        """The good version before the one assigned now (what rollback returns to)."""
        older = [v for v in self.history if v != self.assigned]
        return older[-1] if older else None


@dataclass
class RolloutRecord:
    image: str
    to_version: str
    plan: dict[str, Any]
    started: float
    name: str = ""  # the export name whose `current` moves when the rollout completes green
    finished: float | None = None
    outcome: str = "running"  # running | completed | stopped | interrupted
    reason: str = ""


_SMOKE_WORDS = {"pass": Outcome.OK.value, "fail": Outcome.FAILED.value}


def _board(raw: dict[str, Any]) -> BoardState:
    known = {k: v for k, v in raw.items() if k in BoardState.__dataclass_fields__}
    board = BoardState(**known)
    # Files written before the vocabulary was one said "pass"/"fail" for a smoke.
    if board.smoke_status in _SMOKE_WORDS:
        board.smoke_status = _SMOKE_WORDS[board.smoke_status]
    return board


@dataclass
class State:
    path: Path
    boards: dict[str, BoardState] = field(default_factory=dict)
    rollout: RolloutRecord | None = None
    legacy: Path | None = None  # a controller-local file this state was read from
    # Writes the saved JSON and the event lines elsewhere than `path` (a remote root's, through
    # its session): store(state_json, event_lines).
    store: Callable[[str, list[str]], None] | None = field(default=None, repr=False, compare=False)
    command: str = ""  # the writer, named in the events its saves log
    # What was last read or saved: each save logs the events between it and the new state.
    saved: events.Snapshot | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.saved is None:
            self.saved = self.snapshot()

    def board(self, name: str) -> BoardState:
        return self.boards.setdefault(name, BoardState())

    def snapshot(self) -> events.Snapshot:
        """What a save would write, less its timestamp (a deep copy)."""
        boards = {n: asdict(b) for n, b in self.boards.items()}
        return (boards, asdict(self.rollout) if self.rollout else None)

    def to_json(self) -> str:
        data = {
            "boards": {n: asdict(b) for n, b in sorted(self.boards.items())},
            "rollout": asdict(self.rollout) if self.rollout else None,
            "saved": time.time(),
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def save(self) -> None:
        """Write to the export root (durably), the events since the last save first (see
        netroot.fleet.events); the first write takes a legacy file over."""
        now = self.snapshot()
        assert self.saved is not None  # set by __post_init__
        lines = [e.to_json() for e in events.changes(self.saved, now, self.command or "netroot")]
        if self.store is not None:
            self.store(self.to_json(), lines)
        else:
            append_lines(self.path.with_name(events.EVENTS_NAME), lines, max_bytes=events.MAX_BYTES)
            atomic_write(self.path, self.to_json(), mode=0o600)
        self.saved = now
        if self.legacy is not None:
            self.legacy.rename(self.legacy.with_name(self.legacy.name + ".taken-over"))
            self.legacy = None


def state_path(root: Path) -> Path:
    return root / STATE_NAME


def legacy_path(inventory_path: Path) -> Path:
    """Where netroot kept the state before it moved to the export root."""
    return inventory_path.with_name(f".{inventory_path.stem}.netroot-state.json")


def parse_state(path: Path, text: str) -> tuple[dict[str, BoardState], RolloutRecord | None]:
    try:
        data = json.loads(text)
        boards = {n: _board(b) for n, b in data.get("boards", {}).items()}
        raw = data.get("rollout")
        rollout = RolloutRecord(**raw) if raw else None
    except (ValueError, TypeError, AttributeError) as exc:
        raise NetrootError(
            f"{path}: unreadable fleet state ({exc})",
            "restore it from a backup, or move it aside to start from the boards' facts",
        ) from None
    return boards, rollout


def load_state(root: Path, inventory_path: Path | None = None) -> State:
    """The fleet state of export root `root` (read-only: nothing is written here)."""
    path = state_path(root)
    try:
        return State(path, *parse_state(path, path.read_text()))
    except FileNotFoundError:
        pass
    legacy = legacy_path(inventory_path) if inventory_path is not None else None
    if legacy is not None and legacy.is_file():
        return State(path, *parse_state(legacy, legacy.read_text()), legacy=legacy)
    return State(path)
