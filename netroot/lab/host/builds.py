"""The lab's trees built at once: every core busy, the longest first, progress with time left.

The trees are independent mmdebstrap runs, and each is mostly one process (dpkg and the
package scripts of a foreign tree run under qemu-user, one emulated core): run one beside
the other, and report every half minute what is still building and about how long it has left.
Estimates come from this cache's own last builds (build-times.json), else from figures measured
on a 2-core machine; they only inform the user, nothing waits on them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from netroot.lab.host import images
from netroot.lab.recipes import Recipe

Report = Callable[[str], None]
TIMES_FILE = "build-times.json"
# Cold builds on a 2-core machine (2026-12-05), the fallback before this cache built anything.
# The torch tree's matters most: without it a fresh machine guessed 120 s and started the longest
# build of all after the boards' and Raspbian's trees (issue 40: 504 s; 414 s on a quiet 2-core
# machine on 2026-12-07 with its bytecode compiled on the host, bench/README.md).
FIRST_ESTIMATE_S = {
    "raspbian-torch-rootfs": 420.0,
    "board-rootfs": 300.0,
    "raspbian-rootfs": 240.0,
    "server-rootfs": 80.0,
    "kernel": 40.0,
}
TICK_S = 30.0


def _name(recipe: Recipe) -> str:
    return f"{recipe.name}-{recipe.arch}"


def load_times(cache: Path) -> dict[str, float]:
    """Seconds of the last build of each tree in this cache (empty when unknown or unreadable)."""
    try:
        data = json.loads((cache / TIMES_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))}


def expected_s(recipe: Recipe, times: Mapping[str, float]) -> float:
    """How long `recipe` should take: its last build here, else the first-build figure."""
    return times.get(_name(recipe)) or FIRST_ESTIMATE_S.get(recipe.name, 120.0)


def schedule(recipes: Iterable[Recipe], times: Mapping[str, float]) -> list[Recipe]:
    """Longest first: a long build started last would leave one core idle at the end."""
    return sorted(recipes, key=lambda r: -expected_s(r, times))


def makespan_s(durations: Sequence[float], workers: int) -> float:
    """When the last of `durations` ends, started in that order on `workers` slots."""
    slots = [0.0] * max(1, workers)
    for d in durations:
        i = slots.index(min(slots))
        slots[i] += d
    return max(slots)


def progress_line(running: Mapping[str, tuple[float, float]], queued: int) -> str:
    """One line: each running build's seconds so far and about how long it has left."""
    parts = []
    for name, (elapsed, expected) in sorted(running.items()):
        left = expected - elapsed
        if left > 0:
            parts.append(f"{name} {elapsed:.0f} s (about {left:.0f} s left)")
        else:
            parts.append(f"{name} {elapsed:.0f} s (longer than the {expected:.0f} s expected)")
    waiting = f"; {queued} waiting" if queued else ""
    return "building " + ", ".join(parts) + waiting


def build_all(
    recipes: Iterable[Recipe],
    cache: Path,
    report: Report,
    workers: int | None = None,
    tick_s: float = TICK_S,
) -> dict[str, float]:
    """Build every tree of `recipes` not yet in `cache`, at once; returns seconds per tree."""
    missing = [r for r in dict.fromkeys(recipes) if not (cache / r.filename).exists()]
    if not missing:
        return {}
    times = load_times(cache)
    order = schedule(missing, times)
    slots = workers or max(2, os.cpu_count() or 2)
    total = makespan_s([expected_s(r, times) for r in order], slots)
    names = ", ".join(_name(r) for r in order)
    at_once = f" ({min(slots, len(order))} at a time)" if len(order) > 1 else ""
    report(f"building {names}{at_once}: about {total:.0f} s, once")
    started: dict[str, float] = {}
    took: dict[str, float] = {}
    lock = threading.Lock()
    done = threading.Event()

    def build(recipe: Recipe) -> None:
        with lock:
            started[_name(recipe)] = time.monotonic()
        images.rootfs(recipe, cache, lambda _msg: None)
        with lock:
            took[_name(recipe)] = time.monotonic() - started.pop(_name(recipe))

    def ticker() -> None:
        while not done.wait(tick_s):
            with lock:
                now = time.monotonic()
                running = {
                    _name(r): (now - started[_name(r)], expected_s(r, times))
                    for r in order
                    if _name(r) in started
                }
                queued = len(order) - len(running) - len(took)
            if running:
                report(progress_line(running, queued))

    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    errors: list[BaseException] = []
    try:
        with ThreadPoolExecutor(max_workers=slots) as pool:
            futures = {pool.submit(build, r): r for r in order}
            for future in as_completed(futures):
                recipe = futures[future]
                exc = future.exception()
                if exc is not None:
                    errors.append(exc)
                    continue
                report(f"{_name(recipe)} built in {took[_name(recipe)]:.0f} s")
    finally:
        done.set()
        thread.join()
    _save_times(cache, {**times, **took})
    if errors:
        raise errors[0]
    return took


def _save_times(cache: Path, times: Mapping[str, float]) -> None:
    # Only an estimate for the next cold build: a failed write loses nothing that matters.
    tmp = cache / f".{TIMES_FILE}.tmp"
    try:
        tmp.write_text(json.dumps({k: round(v, 1) for k, v in sorted(times.items())}) + "\n")
        tmp.replace(cache / TIMES_FILE)
    except OSError:
        tmp.unlink(missing_ok=True)
