"""What a Ctrl-C leaves, in the words a command says on its way out (exit 130).

A command that commits as it goes sets `AppContext.on_interrupt` to one of these before its
first commit; the others leave the default, "interrupted: nothing committed" (they read, or
commit only at their very end). Each reads back what was committed, rather than trusting what
the interrupted code was about to do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def committed_since(root: Path, name: str) -> Callable[[], str]:
    """What an interrupted local export committed: a version is committed once its manifest
    is renamed into versions/ (export.service), so the versions now and before say it."""
    from netroot.export.manifest import Layout, check_name, current_id

    layout = Layout(root, check_name(name))

    def committed() -> set[str]:
        return (
            {p.stem for p in layout.versions.glob("*.json")} if layout.versions.is_dir() else set()
        )

    before, current = committed(), current_id(layout)

    def said() -> str:
        new = sorted(committed() - before)
        if not new:
            return f"interrupted: nothing committed ({name}'s current is unchanged)"
        moved = current_id(layout) != current
        return f"interrupted: {name} {', '.join(new)} committed" + (
            f"; current -> {current_id(layout)}" if moved else "; current unchanged"
        )

    return said


def on_server(name: str) -> Callable[[], str]:
    """An export to a server: the server commits only a tree wholly sent and verified, and the
    control host cannot ask it once its SSH session died with the Ctrl-C."""
    return lambda: (
        "interrupted: the server commits a version only once it is wholly sent and verified; "
        f"`netroot versions {name}` shows whether it was"
    )


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
