"""The benches' one way to run netroot on the running lab's inventory (not a test)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from netroot import paths


def netroot_on_lab(*args: str) -> float:
    """Run `netroot ARGS` on the lab's inventory; seconds taken. A failure stops the bench,
    naming the command, its exit code and the end of its stderr."""
    env = {**os.environ, "NETROOT_INVENTORY": str(paths.lab_inventory()), "NO_COLOR": "1"}
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "netroot", *args], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"netroot {' '.join(args)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return time.monotonic() - t0
