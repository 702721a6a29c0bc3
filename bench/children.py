"""The controller's own cost in a benchmark: this process adopts what its commands leave behind
(ssh masters re-parented to it), so their CPU counts in RUSAGE_CHILDREN and nothing outlives a
phase."""

from __future__ import annotations

import ctypes
import os
import signal
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphans of this process's commands are re-parented to it (prctl(2))."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans() -> None:
    """Stop and reap what a command left behind (ssh masters re-parented to us)."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            os.kill(int(stat.parent.name), signal.SIGTERM)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
