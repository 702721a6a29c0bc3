"""A scratch lab for the before/after benchmarks of a first provision or rollout (not a test).

The user's lab is never touched: a running lab is stopped first, and the scratch lab lives in
its own `NETROOT_HOME` under /var/tmp, removed at the end unless kept (its run events).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.bench_batch import _worktree
from bench.bench_boot import NETROOT

IMAGE = "netroot-lab/raspbian:bookworm"


def say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ScratchLab:
    """A booted lab with the lab image exported: its home, the env that points netroot at it,
    and its boards' addresses."""

    home: Path
    env: dict[str, str]
    addresses: list[str]


@contextmanager
def scratch_lab(boards: int, prefix: str, keep: bool = False) -> Iterator[ScratchLab]:
    """`boards` boards booted (`lab up --boot`) and the lab image exported as `raspbian`."""
    home = Path(tempfile.mkdtemp(prefix=f"netroot-bench-{prefix}-", dir="/var/tmp"))
    env = {**os.environ, "NETROOT_HOME": str(home), "NO_COLOR": "1"}
    plain = {k: v for k, v in os.environ.items() if k != "NETROOT_HOME"}
    subprocess.run([*NETROOT, "lab", "down"], env=plain, capture_output=True, check=False)
    try:
        up = [*NETROOT, "lab", "up", "--boot", "--arm64", "0", "--boards", str(boards)]
        subprocess.run(up, env=env, check=True, capture_output=True)
        export = [*NETROOT, "export", IMAGE, "--name", "raspbian"]
        subprocess.run(export, env=env, check=True, capture_output=True)
        data = yaml.safe_load((home / "lab" / "inventory.yml").read_text())
        hosts = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
        yield ScratchLab(home, env, [str(host["ansible_host"]) for host in hosts.values()])
    finally:
        subprocess.run([*NETROOT, "lab", "down"], env=env, capture_output=True, check=False)
        if not keep:
            shutil.rmtree(home, ignore_errors=True)


def paired_rounds(
    base: str, pairs: int, what: str, round_: Callable[[Path | None], dict[str, Any]]
) -> list[dict[str, Any]]:
    """`pairs` pairs of rounds, before (a `git worktree` of `base`) then after (this tree):
    `round_` gets the worktree's path, or None for this tree."""
    rounds: list[dict[str, Any]] = []
    with _worktree(base) as old:
        for i in range(pairs):
            for side, path in (("before", old), ("after", None)):
                say(f"pair {i + 1}: {side}: {what}")
                rounds.append({"side": side, **round_(path)})
                say(f"  {rounds[-1]}")
    return rounds
