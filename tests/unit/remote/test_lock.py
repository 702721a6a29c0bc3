from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netroot.errors import Exit
from netroot.remote import lock


def test_second_writer_refused_naming_the_first(tmp_path: Path) -> None:
    with lock.held(tmp_path, "netroot rollout img:1"):
        with pytest.raises(lock.LockHeld) as info:
            lock.acquire(tmp_path, "netroot rollout img:2")
        assert info.value.code == Exit.BUSY and int(Exit.BUSY) == 6
        assert "netroot rollout img:1" in info.value.message
        assert lock.this_host() in info.value.message
        with pytest.raises(lock.LockHeld):
            lock.refuse_if_held(tmp_path)
    assert lock.read_holder(tmp_path) is None
    lock.refuse_if_held(tmp_path)  # nothing held: no error, and nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == [".netroot-lock.guard"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _plant(root: Path, host: str, pid: int) -> None:
    holder = {"host": host, "pid": pid, "pid_start": "", "command": "netroot rollout x",
              "started": 1.0, "token": "feed"}  # fmt: skip
    (root / lock.LOCK_NAME).write_text(json.dumps(holder))


def test_dead_holder_on_this_host_is_taken_over(tmp_path: Path) -> None:
    _plant(tmp_path, lock.this_host(), _dead_pid())
    me = lock.acquire(tmp_path, "netroot rollout y")
    holder = lock.read_holder(tmp_path)
    assert holder is not None and holder.token == me.token
    lock.release(tmp_path, me)
    assert lock.read_holder(tmp_path) is None


def test_pid_reused_by_another_process_is_stale(tmp_path: Path) -> None:
    holder = {"host": lock.this_host(), "pid": 1, "pid_start": "not-its-start",
              "command": "netroot rollout x", "started": 1.0, "token": "feed"}  # fmt: skip
    (tmp_path / lock.LOCK_NAME).write_text(json.dumps(holder))
    lock.release(tmp_path, lock.acquire(tmp_path, "netroot rollout y"))


def test_other_host_needs_break_lock(tmp_path: Path) -> None:
    _plant(tmp_path, "elsewhere.example", 4242)
    with pytest.raises(lock.LockHeld, match=r"elsewhere\.example") as info:
        lock.acquire(tmp_path, "netroot rollout y")
    assert "--break-lock" in info.value.hint
    me = lock.acquire(tmp_path, "netroot rollout y", break_lock=True)
    lock.release(tmp_path, me)


def test_release_leaves_a_lock_that_is_not_ours(tmp_path: Path) -> None:
    me = lock.acquire(tmp_path, "netroot provision boards")
    _plant(tmp_path, "elsewhere.example", 4242)  # broken and taken over meanwhile
    lock.release(tmp_path, me)
    holder = lock.read_holder(tmp_path)
    assert holder is not None and holder.host == "elsewhere.example"
