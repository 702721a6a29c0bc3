"""What each board runs, should run, and how its last smoke went: a JSON file beside the inventory.

Written atomically (temp file, fsync, rename) every time a board changes, so an interrupted
rollout can be resumed or rolled back from it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class BoardState:
    assigned: str | None = None  # the version the board should run
    last_good: str | None = None  # the last version that passed smoke on it
    history: list[str] = field(default_factory=list)  # versions that passed, oldest first
    phase: str = "idle"  # idle | switching | smoking | ok | failed | rolled-back | unreachable
    smoke_status: str | None = None  # pass | fail | unreachable
    smoke_time: float | None = None
    message: str = ""

    def record_good(self, version: str) -> None:
        self.last_good = version
        if not self.history or self.history[-1] != version:
            self.history.append(version)
        self.history = self.history[-20:]

    def previous_good(self) -> str | None:
        """The good version before the current one (what rollback returns to)."""
        older = [v for v in self.history if v != self.assigned]
        return older[-1] if older else None


@dataclass
class RolloutRecord:
    image: str
    to_version: str
    plan: dict[str, Any]
    started: float
    finished: float | None = None
    outcome: str = "running"  # running | completed | stopped | interrupted
    reason: str = ""


@dataclass
class State:
    path: Path
    boards: dict[str, BoardState] = field(default_factory=dict)
    rollout: RolloutRecord | None = None

    def board(self, name: str) -> BoardState:
        return self.boards.setdefault(name, BoardState())

    def save(self) -> None:
        data = {
            "boards": {n: asdict(b) for n, b in sorted(self.boards.items())},
            "rollout": asdict(self.rollout) if self.rollout else None,
            "saved": time.time(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def state_path(inventory_path: Path) -> Path:
    return inventory_path.with_name(f".{inventory_path.stem}.netroot-state.json")


def load_state(inventory_path: Path) -> State:
    path = state_path(inventory_path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return State(path)
    boards = {n: BoardState(**b) for n, b in data.get("boards", {}).items()}
    rollout = RolloutRecord(**data["rollout"]) if data.get("rollout") else None
    return State(path, boards, rollout)
