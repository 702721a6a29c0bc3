"""Busy processes on the host, a controlled extra load for a bench's hogged rounds (not a test)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType

from bench.reboot_load import schedstat_ns

SPIN = "while True: pass"
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """In the child before exec: the kernel kills it when the bench dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the bench died before the prctl: no signal will come
        os._exit(1)


def cpu_ns(pid: int) -> tuple[int, int]:
    """A process's (ns on a core, ns waiting for one), summed over its threads; (0, 0) once
    it is gone."""
    run = wait = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0, 0
    for task in tasks:
        try:
            r, w = schedstat_ns((task / "schedstat").read_text())
        except OSError:  # the thread ended meanwhile
            continue
        run, wait = run + r, wait + w
    return run, wait


class Hogs:
    """`count` processes spinning on the CPU while the `with` block runs: killed on the way
    out (an exception or Ctrl-C included), and by the kernel if the bench itself is killed."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Hogs:
        parent = os.getpid()
        try:
            for _ in range(self.count):
                self.procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", SPIN],
                        stdin=subprocess.DEVNULL,
                        # started before the round's threads (a fork beside live
                        # threads could deadlock in the child before exec)
                        preexec_fn=lambda: _die_with_parent(parent),
                    )
                )
        except BaseException:
            self.end()
            raise
        return self

    def cpu_s(self) -> float:
        """The CPU seconds the hogs have had so far."""
        return sum(cpu_ns(p.pid)[0] for p in self.procs) / 1e9

    def end(self) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.end()
