"""Helpers shared by the smoke and rollout e2e tests: run netroot, build variant images."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BASE_IMAGE = "netroot-lab/raspbian:bookworm"
NETROOT = [sys.executable, "-m", "netroot"]


def env_for(inventory: Path) -> dict[str, str]:
    """The environment netroot runs in for a test: the inventory, no colour, wide lines."""
    return {**os.environ, "NETROOT_INVENTORY": str(inventory), "NO_COLOR": "1", "COLUMNS": "200"}


def netroot(inventory: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NETROOT, *args], capture_output=True, text=True, env=env_for(inventory), timeout=timeout,
        check=False,
    )  # fmt: skip


def netroot_while(
    inventory: Path, args: Sequence[str], during: Callable[[Callable[[], bool]], None]
) -> subprocess.CompletedProcess[str]:
    """Run `netroot ARGS` while `during(running)` acts on the lab from a thread (`running()`:
    netroot has not exited yet), as an operator would in the middle of a command."""
    proc = subprocess.Popen(
        [*NETROOT, *args], env=env_for(inventory), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    thread = threading.Thread(target=during, args=(lambda: proc.poll() is None,))
    thread.start()
    out, err = proc.communicate(timeout=3600)
    thread.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def netroot_json(inventory: Path, *args: str, codes: tuple[int, ...] = (0,)) -> Any:
    proc = netroot(inventory, *args, "--json")
    assert proc.returncode in codes, f"netroot {args}: rc {proc.returncode}\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout)


def variant_image(tag: str, stamp: str, base: str = BASE_IMAGE) -> str:
    """`base` (the lab image) plus /etc/netroot-stamp, tagged `tag` in the same repository
    (built locally, never pulled)."""
    ref = f"{base.rpartition(':')[0]}:{tag}"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {base}\nCOPY stamp /etc/netroot-stamp\n")
        Path(tmp, "stamp").write_text(stamp + "\n")
        subprocess.run(
            ["docker", "build", "--pull=false", "--platform", "linux/arm/v7", "-q", "-t", ref, tmp],
            check=True,
            capture_output=True,
        )
    return ref


def export(inventory: Path, image: str) -> str:
    data = netroot_json(inventory, "export", image, "--name", "raspbian")
    return str(data.get("version") or data["manifest"]["version"])
