"""Processes the lab started, tracked by PID and checked by command line before any signal."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def cmdline(pid: int) -> list[str]:
    """The process's argv, or [] if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def is_ours(pid: int, marker: str) -> bool:
    """True if `pid` is alive and its command line contains `marker` (guards against PID reuse)."""
    if pid <= 1:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    if state == "Z":
        return False
    return any(marker in arg for arg in cmdline(pid))


def read_pidfile(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def stop(pid: int, marker: str, grace: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after `grace` seconds; only if the process is still ours."""
    if not is_ours(pid, marker):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not is_ours(pid, marker):
            return True
        time.sleep(0.1)
    if is_ours(pid, marker):
        os.kill(pid, signal.SIGKILL)
        while is_ours(pid, marker):
            time.sleep(0.05)
    return True


def rss_kib(pid: int) -> int | None:
    """Resident set size of `pid` in KiB (for `lab status`)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None
