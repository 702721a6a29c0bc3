"""netroot.fsutil: the one atomic write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netroot.fsutil import atomic_write


def test_atomic_write_replaces_and_sets_mode(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "state.json"
    atomic_write(target, "one", mode=0o600)
    atomic_write(target, b"two", mode=0o600)
    assert target.read_text() == "two"
    assert target.stat().st_mode & 0o777 == 0o600
    assert os.listdir(target.parent) == ["state.json"]


def test_atomic_write_failure_keeps_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    atomic_write(target, "old")

    def refuse(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        atomic_write(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_follower_reads_each_line_once_across_rotations(tmp_path: Path) -> None:
    from netroot.fsutil import append_lines, read_log, read_log_from

    path = tmp_path / "log.jsonl"
    assert read_log_from(path, None) == ("", (0, 0, 0))
    got: list[str] = []
    cursor = None
    for i in range(60):
        append_lines(path, [f"line {i:03d}"], max_bytes=120)  # rotates every ~13 lines
        if i % 4 == 0:  # a poll now and then: a rotation between two of them
            text, cursor = read_log_from(path, cursor)
            got += text.splitlines()
    text, cursor = read_log_from(path, cursor)
    got += text.splitlines()
    assert got == [f"line {i:03d}" for i in range(60)]  # one rotation at most between polls
    assert read_log_from(path, cursor)[0] == ""  # nothing new: nothing read
    # A cursor from before two rotations: the whole log again (what is left of it).
    stale = cursor
    for i in range(60, 90):
        append_lines(path, [f"line {i:03d}"], max_bytes=120)
    assert read_log_from(path, stale)[0] == read_log(path)


def test_a_follower_between_the_rotation_and_the_next_append(tmp_path: Path) -> None:
    from netroot.fsutil import append_lines, read_log_from

    path = tmp_path / "log.jsonl"
    append_lines(path, ["a", "b"], max_bytes=1 << 20)
    text, cursor = read_log_from(path, None)
    append_lines(path, ["c"], max_bytes=1 << 20)
    os.replace(path, path.with_name(path.name + ".1"))  # append_lines' rotation, no append yet
    text, cursor = read_log_from(path, cursor)
    assert text == "c\n"
    append_lines(path, ["d"], max_bytes=1 << 20)
    assert read_log_from(path, cursor)[0] == "d\n"
