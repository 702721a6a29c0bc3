"""Run dirs are pruned to the newest few, never one another netroot process is running in."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from netroot.adapters import ansible


def test_prune_keeps_the_newest_and_any_run_in_use(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"2026120{i}T000000").mkdir()
    busy = tmp_path / "20261200T000000"
    fd = os.open(busy / ansible.IN_USE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # held through another open file: as another process's
    try:
        ansible._prune(tmp_path, 2)
    finally:
        os.close(fd)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "20261200T000000", "20261203T000000", "20261204T000000",
    ]  # fmt: skip
    ansible._prune(tmp_path, 2)  # released: it goes now
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20261203T000000", "20261204T000000"]
