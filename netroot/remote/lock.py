"""One writer at a time on an export root: a lock file naming its holder.

Rollout, rollback and provision take it before they change anything; a second writer is
refused at once (exit 6) with the holder's host, pid, command and start time. The lock is a
file created with link(2), which is atomic on local filesystems and on NFS, so control hosts
that share the export root exclude each other. A holder that died leaves the file behind:
on the same host it is taken over when its pid is gone (or now belongs to another process);
a holder on another host cannot be checked from here, so taking it over needs --break-lock.
Read-only commands never look at the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from netroot.errors import Exit, NetrootError, UsageError, held_by
from netroot.fsutil import atomic_write

LOCK_NAME = ".netroot-lock"


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    pid_start: str  # the process's start time in /proc (guards against a reused pid)
    command: str
    started: float
    token: str

    def describe(self) -> str:
        return held_by(self.command, self.pid, self.host, self.started, time.time())

    def way_out(self) -> str:
        """The hint of a refusal: wait, or (only for a holder on another host) break it."""
        if self.host == this_host():
            return (
                f"wait for it to finish, or stop it (kill {self.pid}); a lock whose process is "
                "gone is taken over by the next writer"
            )
        return f"wait for it; if that process is gone on {self.host}, run again with --break-lock"


class LockHeld(NetrootError):
    def __init__(self, holder: Holder, hint: str) -> None:
        super().__init__(f"another netroot writer is at work: {holder.describe()}", hint, Exit.BUSY)
        self.holder = holder


def this_host() -> str:
    return os.uname().nodename


def _pid_start(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # Field 22 (starttime) counts from the closing paren of the command name, which may hold spaces.
    return stat.rpartition(")")[2].split()[19]


def _alive(holder: Holder) -> bool:
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not holder.pid_start or _pid_start(holder.pid) in ("", holder.pid_start)


def read_holder(root: Path) -> Holder | None:
    """Who holds the lock on `root`, or None (read-only)."""
    try:
        data = json.loads((root / LOCK_NAME).read_text())
        return Holder(**data)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        # A torn or foreign file: treat as held by nobody we can check.
        return Holder("?", 0, "", "unreadable lock file", 0.0, "")


def _stale(holder: Holder, break_lock: bool) -> bool:
    if holder.host == this_host():
        return not _alive(holder)
    return break_lock


@contextmanager
def _guard(root: Path) -> Iterator[None]:
    # Take-overs are serialised so two writers cannot both remove a stale lock and then each
    # other's fresh one.
    fd = os.open(root / f"{LOCK_NAME}.guard", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def acquire(root: Path, command: str, *, break_lock: bool = False) -> Holder:
    """Take the lock on `root` for `command`, or raise LockHeld naming the holder."""
    me = Holder(
        this_host(),
        os.getpid(),
        _pid_start(os.getpid()),
        command,
        time.time(),
        secrets.token_hex(8),
    )
    lock = root / LOCK_NAME
    tmp = root / f"{LOCK_NAME}.{me.token}.tmp"
    try:
        root.mkdir(parents=True, exist_ok=True)
        atomic_write(tmp, json.dumps(asdict(me)))  # complete and durable before it is linked
    except OSError as exc:
        raise UsageError(
            f"cannot write the lock in the export root {root}: {exc.strerror}",
            "netroot runs on the NFS server, or on a host that mounts its export root read-write",
        ) from None
    try:
        for _ in range(5):
            try:
                os.link(tmp, lock)
                return me
            except FileExistsError:
                pass
            with _guard(root):
                holder = read_holder(root)
                if holder is None:
                    continue  # released meanwhile: try again
                if not _stale(holder, break_lock):
                    raise LockHeld(holder, holder.way_out())
                lock.unlink(missing_ok=True)
                try:
                    os.link(tmp, lock)
                    return me
                except FileExistsError:
                    continue
        raise NetrootError(f"could not take the lock {lock}", "try again")
    finally:
        tmp.unlink(missing_ok=True)


def release(root: Path, me: Holder) -> None:
    """Remove the lock if it is still ours (a --break-lock may have taken it)."""
    holder = read_holder(root)
    if holder is not None and holder.token == me.token:
        (root / LOCK_NAME).unlink(missing_ok=True)


@contextmanager
def held(root: Path, command: str, *, break_lock: bool = False) -> Iterator[Holder]:
    """The lock for the duration of a block; released on any exit but kill -9."""
    me = acquire(root, command, break_lock=break_lock)
    try:
        yield me
    finally:
        release(root, me)


def refuse_if_held(root: Path, *, break_lock: bool = False) -> None:
    """Fail fast (before a slow plan) when a live writer holds the lock; takes nothing."""
    holder = read_holder(root)
    if holder is not None and not _stale(holder, break_lock):
        raise LockHeld(holder, holder.way_out())
