"""What each board should run: the one rule every command uses (pure).

The inventory pin (`netroot_version`) wins; else the version the fleet state assigned to the
board (a rollout or rollback); else the image's release pointer `current`, for a board never
assigned. Provision, smoke, status, rollout, rollback and prune all ask here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from netroot.inventory import Board

Source = Literal["pin", "assigned", "current", "none"]


@dataclass(frozen=True)
class Desired:
    version: str | None  # None: nothing to run yet (never assigned, image never released)
    source: Source


def desired(board: Board, assigned: str | None, current: str | None) -> Desired:
    """The version `board` should run, and which rule decided it."""
    if board.version:
        return Desired(board.version, "pin")
    if assigned:
        return Desired(assigned, "assigned")
    if current:
        return Desired(current, "current")
    return Desired(None, "none")


def desired_all(
    boards: Iterable[Board],
    assigned: Mapping[str, str | None],
    current_of: Callable[[str], str | None],
) -> dict[str, Desired]:
    """`desired` for each board; `current_of(image)` reads an image's release pointer."""
    currents: dict[str, str | None] = {}
    out: dict[str, Desired] = {}
    for board in boards:
        if board.image not in currents:
            currents[board.image] = current_of(board.image)
        out[board.name] = desired(board, assigned.get(board.name), currents[board.image])
    return out
