"""The QPU smoke modes: the one list every layer checks against (stdlib-only, bundled).

auto: run where a VideoCore IV is found, skip with the reason elsewhere; require: a missing
VideoCore IV is a failure; skip: nothing is touched; emulate: a FAKE healthy Pi 3B whose
mailbox runs the kernel on netroot's emulator (every line says so).
"""

from __future__ import annotations

MODES = ("auto", "require", "skip", "emulate")


def check_mode(mode: str) -> str:
    """`mode` itself if it is one of MODES, else ValueError naming the choices."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    return mode
