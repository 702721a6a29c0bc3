"""The main thread's wait for its worker threads, short enough for Ctrl-C to stop it.

Linux gives a process's SIGINT to any of its threads that does not block it at that moment:
to a worker whenever the main thread has signals blocked (glibc blocks them all while it
creates a thread) or is stopped by a tracer. CPython's C handler then only marks the signal;
Python's handler (KeyboardInterrupt) runs in the main thread, which looks for a marked signal
when it takes the interpreter lock back. A main thread asleep on a future's lock until the
future is done (`Future.result()`, `Executor.map`) takes nothing back: a Ctrl-C taken by a
worker waited for every silent board's probe (a minute; issue 38's flake of
tests/unit/cli/test_interrupt.py). Waiting in short slices wakes it often enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, wait
from typing import TypeVar

T = TypeVar("T")

# How long a Ctrl-C taken by a worker thread can go unnoticed: waking five times a second
# costs nothing beside an SSH round trip.
WAKE_S = 0.2


def results(futures: Sequence[Future[T]]) -> list[T]:
    """Each future's result, in order (its exception raised, as `Executor.map` does), the
    main thread waking every WAKE_S to see whether a Ctrl-C came meanwhile."""
    pending = set(futures)
    while pending:
        _, pending = wait(pending, timeout=WAKE_S)
    return [future.result() for future in futures]
