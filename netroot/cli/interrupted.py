"""What a Ctrl-C leaves, in the words a command says on its way out (exit 130).

A command that commits as it goes sets `AppContext.on_interrupt` to one of these (an export:
its place's, netroot.export.place.Place.interrupted) before its first commit; the others leave
the default, "interrupted: nothing committed" (they read, or commit only at their very end).
Each reads back what was committed, rather than trusting what the interrupted code was about
to do.
"""

from __future__ import annotations

from typing import Any


def switched(fleet: Any, boards: list[str], version: str) -> str:
    """What an interrupted rollout leaves, read back from the fleet's state (saved as each
    board changes): which boards were switched to `version`."""
    try:
        state = fleet.load()
        done = [b for b in boards if b in state.boards and state.boards[b].assigned == version]
    except Exception:  # a remote root's session died with the Ctrl-C: say what is known
        return (
            f"interrupted: some boards may run {version}; `netroot status` shows which, "
            "the same command resumes, `netroot rollback` undoes"
        )
    if not done:
        return f"interrupted: no board switched to {version}; `current` unchanged"
    return (
        f"interrupted: {len(done)} of {len(boards)} boards switched to {version} "
        f"({', '.join(done)}); `current` unchanged; the same command resumes, "
        "`netroot rollback` undoes"
    )


def rolled_back(fleet: Any, versions: dict[str, str]) -> str:
    """What an interrupted rollback leaves: which boards are back (from the saved state)."""
    try:
        state = fleet.load()
        done = [
            b for b, v in versions.items() if b in state.boards and state.boards[b].assigned == v
        ]
    except Exception:  # a remote root's session died with the Ctrl-C
        return "interrupted: some boards may be rolled back; `netroot status` shows which"
    if not done:
        return "interrupted: no board rolled back"
    return f"interrupted: rolled back {', '.join(done)}; the others unchanged"
