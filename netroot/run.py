"""Every subprocess goes through here, so failures are reported the same way everywhere."""

from __future__ import annotations

import logging
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from netroot.errors import EnvironmentMissing, NetrootError

log = logging.getLogger("netroot.run")


def describe_returncode(rc: int) -> str:
    """Human text for a return code: 127 is 'not found', negative codes name the signal."""
    if rc == 127:
        return "command not found (exit 127)"
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def run(
    cmd: Sequence[str | Path],
    *,
    check: bool = True,
    capture: bool = True,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = None,
    hint: str = "",
) -> subprocess.CompletedProcess[bytes]:
    """Run a command; on failure raise NetrootError naming the command, its stderr and a hint."""
    argv = [str(c) for c in cmd]
    log.debug("run: %s", shlex.join(argv))
    try:
        proc = subprocess.run(
            argv,
            input=input,
            capture_output=capture,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise EnvironmentMissing(
            f"{argv[0]}: not installed", hint or "run `netroot lab doctor` to see what to install"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise NetrootError(f"{shlex.join(argv)}: timed out after {timeout} s", hint) from exc
    if check and proc.returncode != 0:
        err = (proc.stderr or b"").decode(errors="replace").strip().splitlines()
        last = err[-1] if err else ""
        raise NetrootError(
            f"{shlex.join(argv)}: {describe_returncode(proc.returncode)}"
            + (f": {last}" if last else ""),
            hint,
        )
    return proc
