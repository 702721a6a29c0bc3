"""A board's qcow2 overlay is kept across `lab up` only over the very base build it was made on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from netroot.lab.host import disk

pytestmark = pytest.mark.skipif(shutil.which("qemu-img") is None, reason="needs qemu-img")


def _build_base(path: Path, fill: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(fill * (1 << 20))
    tmp.rename(path)  # as build_base does: a rebuild is a new file at the same path


def _written(disk_path: Path) -> None:
    with disk_path.open("r+b") as f:  # a marker in the qcow2 header area, never read by qemu-img
        f.seek(0, 2)
        f.write(b"board's own writes")


def test_overlay_is_kept_over_the_same_base_and_remade_over_a_rebuilt_one(tmp_path: Path) -> None:
    base = tmp_path / "board-disk-abc.img"
    own = tmp_path / "pi-01" / "disk.qcow2"
    own.parent.mkdir()
    _build_base(base, b"\0")
    disk.overlay(base, own, fresh=False)
    _written(own)
    kept = own.read_bytes()
    disk.overlay(base, own, fresh=False)
    assert own.read_bytes() == kept, "the board's disk was replaced over the same base"

    _build_base(base, b"\1")  # rebuilt in place: same path, other content
    disk.overlay(base, own, fresh=False)
    assert own.read_bytes() != kept, "an overlay over a rebuilt base was kept (corrupt fs)"

    _written(own)
    kept = own.read_bytes()
    disk.overlay(base, own, fresh=True)
    assert own.read_bytes() != kept, "fresh=True kept the old disk"


def test_overlay_without_a_recorded_base_is_remade(tmp_path: Path) -> None:
    base = tmp_path / "base.img"
    _build_base(base, b"\0")
    own = tmp_path / "disk.qcow2"
    disk.overlay(base, own, fresh=False)
    _written(own)
    kept = own.read_bytes()
    own.with_name("disk.qcow2.base").unlink()  # a board disk from before the record existed
    disk.overlay(base, own, fresh=False)
    assert own.read_bytes() != kept
