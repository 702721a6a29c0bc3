"""Work run in a forked child that reports back in JSON lines over a pipe (S12-S14's child).

Why fork and not a new interpreter: the child inherits the smoke's loaded modules, its context
and its QPU platform, so the torch stages import torch once, in the child, and run S13 and S14
where it was imported. Why a child at all: a torch that dies at import (SIGILL on a Cortex-A53,
the OOM killer) or hangs must leave the smoke alive to say so. The parent only reads, each
message under a deadline, and turns how the child ended into words. Linux only (the board's
python3); stdlib-only (bundled).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Send = Callable[[dict[str, Any]], None]
EXIT_GRACE_S = 10.0  # from its last message to its exit: the child only has to leave
STDERR_TAIL = 8192  # bytes of the child's stderr kept, for the last line a diagnosis quotes


@dataclass(frozen=True)
class Ending:
    """How a child ended: its exit code as subprocess gives it (-N: killed by signal N),
    whether the parent killed it at a deadline, and the last line it wrote to stderr."""

    returncode: int
    timed_out: bool
    last_line: str


class Child:
    """`work(send)` in a child forked at construction; its return value is the child's exit
    code. The child's stdout and stderr go to a pipe the parent keeps the tail of (never into
    the smoke's document); an exception is printed there and exits 1."""

    def __init__(self, work: Callable[[Send], int]) -> None:
        # Flushed first, or the child's copy of a buffer would be written a second time.
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        messages, self._message_w = os.pipe()
        errors, error_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(messages)
            os.close(errors)
            _run_child(work, self._message_w, error_w)
        os.close(self._message_w)
        os.close(error_w)
        self._messages, self._errors = messages, errors
        self._lines = b""
        self._tail = b""
        self._late = False  # a deadline passed: end() kills at once
        self._ending: Ending | None = None

    def receive(self, deadline: float) -> dict[str, Any] | None:
        """The child's next message; None when it ended first or `deadline` (time.monotonic)
        passed: end() then says how."""
        while b"\n" not in self._lines:
            left = deadline - time.monotonic()
            if self._messages < 0:
                return None
            if left <= 0:
                self._late = True
                return None
            open_fds = [fd for fd in (self._messages, self._errors) if fd >= 0]
            ready, _, _ = select.select(open_fds, [], [], left)
            if self._errors in ready:
                self._read_errors()
            if self._messages in ready:
                chunk = os.read(self._messages, 65536)
                if not chunk:  # the child exited (or closed the pipe): nothing more comes
                    os.close(self._messages)
                    self._messages = -1
                self._lines += chunk
        line, _, self._lines = self._lines.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def end(self) -> Ending:
        """Reap the child: at once after a missed deadline (SIGKILL), else once it has exited,
        killed all the same if it does not within EXIT_GRACE_S."""
        if self._ending is not None:
            return self._ending
        status = None if self._late else self._wait(EXIT_GRACE_S)
        timed_out = status is None
        if status is None:
            os.kill(self.pid, signal.SIGKILL)
            # Bounded too: a child stuck in the kernel (a D state) dies only when it returns.
            status = self._wait(EXIT_GRACE_S)
        self._read_errors(final=True)
        for fd in (self._messages, self._errors):
            if fd >= 0:
                os.close(fd)
        self._messages = self._errors = -1
        code = -signal.SIGKILL if status is None else os.waitstatus_to_exitcode(status)
        lines = self._tail.decode(errors="replace").strip().splitlines()
        self._ending = Ending(code, timed_out, lines[-1] if lines else "")
        return self._ending

    def _wait(self, grace_s: float) -> int | None:
        deadline = time.monotonic() + grace_s
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def _read_errors(self, final: bool = False) -> None:
        """What the child wrote to stderr so far (`final`: all that is left), its tail kept."""
        while self._errors >= 0:
            if final and not select.select([self._errors], [], [], 0)[0]:
                return
            chunk = os.read(self._errors, 65536)
            self._tail = (self._tail + chunk)[-STDERR_TAIL:]
            if not chunk:
                os.close(self._errors)
                self._errors = -1
            if not final:
                return


def _run_child(work: Callable[[Send], int], message_w: int, error_w: int) -> None:
    """The child's whole life: never returns into the parent's code, never runs its cleanup."""
    code = 1
    try:
        os.dup2(error_w, 1)
        os.dup2(error_w, 2)
        # and Python's own streams, which a test harness may have pointed elsewhere
        stream = open(error_w, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stdout = sys.stderr = stream

        def send(message: dict[str, Any]) -> None:
            data = memoryview((json.dumps(message) + "\n").encode())
            while data:
                data = data[os.write(message_w, data) :]

        code = work(send)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        for out in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed or broken stream
                out.flush()
        os._exit(code)
