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
