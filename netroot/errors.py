"""Errors users can act on, and the exit codes netroot documents."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class Exit(IntEnum):
    """Process exit codes: one meaning each, the same in every command (EXIT_CODES below is the
    table `netroot --help` and the README show)."""

    OK = 0
    FAILED = 1  # the operation ran and failed; `status`: a reachable board drifts
    USAGE = 2  # bad input: arguments, options, inventory, archive, image name
    CHECKS = 3  # smoke or verify checks failed
    UNREACHABLE = 4  # a host (board or NFS server) could not be reached over SSH
    ENVIRONMENT = 5  # a daemon or system package is missing or unreachable, or a disk is full
    BUSY = 6  # another netroot process holds a lock this command needs (it is named)
    INTERRUPTED = 130  # Ctrl-C (SIGINT): what was committed is said on stderr


# (code, meaning): the one table of exit codes.
EXIT_CODES = (
    (Exit.OK, "ok"),
    (Exit.FAILED, "failed (status: a reachable board is not on what it should run)"),
    (Exit.USAGE, "bad input (arguments, options, inventory, archive, image name)"),
    (Exit.CHECKS, "checks failed (smoke, verify)"),
    (Exit.UNREACHABLE, "a host could not be reached over SSH (every command, status too)"),
    (Exit.ENVIRONMENT, "a daemon or package is missing, or a disk is full"),
    (Exit.BUSY, "another netroot process holds a lock (it is named, and the way out)"),
    (Exit.INTERRUPTED, "interrupted (Ctrl-C): stderr says what was committed"),
)
# typer's rich help keeps these lines as they are (one code a line).
EXIT_CODES_HELP = "Exit codes:\n" + "\n".join(
    f"{int(code):>3}  {meaning}" for code, meaning in EXIT_CODES
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


def held_by(command: str, pid: int, host: str, started: float, now: float) -> str:
    """How every lock refusal names its holder: the command, its pid and host, since when."""
    import datetime as dt

    when = dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    age = max(0, int(now - started))
    ago = f"{age}s" if age < 120 else f"{age // 60}m" if age < 7200 else f"{age // 3600}h"
    return f"`{command}` (pid {pid} on {host}, since {when}, {ago} ago)"


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


class Interrupted(NetrootError):
    """Ctrl-C: the message says what was committed before it (or that nothing was)."""

    def __init__(self, message: str = "interrupted: nothing committed", hint: str = "") -> None:
        super().__init__(message, hint, Exit.INTERRUPTED)


class EnvironmentMissing(NetrootError):
    """A daemon, tool or system package netroot needs is not there."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message, hint, Exit.ENVIRONMENT)
