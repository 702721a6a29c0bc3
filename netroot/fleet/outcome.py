"""One vocabulary for what happened to a board in a rollout, rollback, smoke or switch (pure).

Every layer (the fleet's switch and smoke, the engine's per-board results, the recorded state,
the CLI's table and JSON) speaks these words; nothing translates "ok" into "pass" and back.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    OK = "ok"  # switched / smoked green / on the new version
    FAILED = "failed"  # the operation ran and failed on the board
    UNREACHABLE = "unreachable"  # the board could not be reached (counts as failed)
    ROLLED_BACK = "rolled-back"  # failed, then back on its last good version, smoked green
    ROLLBACK_FAILED = "rollback-failed"  # failed, and going back failed too
    NOT_REACHED = "not-reached"  # the rollout stopped before this board's batch


# One operation's result on one board: an Outcome and a message ("" when OK).
Result = tuple[Outcome, str]


def from_smoke_status(status: str, reachable: bool) -> Outcome:
    """A smoke report's per-board status ("pass" | "fail") in the rollout's words."""
    if not reachable:
        return Outcome.UNREACHABLE
    return Outcome.OK if status == "pass" else Outcome.FAILED
