"""Errors users can act on, and the exit codes netroot documents."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class Exit(IntEnum):
    """Process exit codes; documented in `netroot --help` and the README."""

    OK = 0
    FAILED = 1  # the operation ran and failed
    USAGE = 2  # bad input: arguments, inventory, archive, image name
    CHECKS = 3  # smoke or verify checks failed
    UNREACHABLE = 4  # a host could not be reached over SSH
    ENVIRONMENT = 5  # a daemon or system package is missing or unreachable
    BUSY = 6  # another netroot writer holds the export root's lock (it is named)
    INTERRUPTED = 130


EXIT_CODES_HELP = (
    "Exit codes: 0 ok, 1 failed, 2 bad input, 3 checks failed, "
    "4 host unreachable, 5 missing daemon/package, 6 another writer holds the export root's "
    "lock, 130 interrupted."
)


# Which result a run reports when its boards ended differently: a board that failed outweighs
# one that failed its checks, which outweighs one that could not be reached.
_PRECEDENCE = (Exit.FAILED, Exit.CHECKS, Exit.UNREACHABLE)


def worst(codes: Iterable[Exit]) -> Exit:
    """The exit code of a run whose boards ended with `codes` (OK when there are none)."""
    seen = set(codes)
    for code in _PRECEDENCE:
        if code in seen:
            return code
    return Exit.OK


class NetrootError(Exception):
    """An error with a one-line message, a hint for what to do, and an exit code."""

    def __init__(self, message: str, hint: str = "", code: Exit = Exit.FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code

    def __str__(self) -> str:
        return self.message


class UsageError(NetrootError):
    """Bad input from the user: names what was wrong."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message, hint, Exit.USAGE)


class EnvironmentMissing(NetrootError):
    """A daemon, tool or system package netroot needs is not there."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message, hint, Exit.ENVIRONMENT)
