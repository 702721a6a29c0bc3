"""The overlay2 merged view computed from layer dirs (whiteouts, opaque dirs, reuse by origin)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from netroot.export import overlay
from netroot.export.manifest import Entry
from netroot.export.writer import Reuse, Writer


def make(root: Path, files: dict[str, str | None]) -> str:
    """A layer dir: value None is a dir, 'WH' a whiteout, 'OPQ' an opaque dir, else content."""
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            p.mkdir(exist_ok=True)
        elif content == "WH":
            os.mknod(p, 0o020000 | 0o000, os.makedev(0, 0))
        elif content == "OPQ":
            p.mkdir(exist_ok=True)
            os.setxattr(p, "trusted.overlay.opaque", b"y")
        else:
            p.write_text(content)
    return str(root)


@pytest.fixture
def layers(tmp_path: Path) -> list[str]:
    if os.getuid() != 0:
        pytest.skip("whiteouts are 0:0 device nodes and opaque marks are trusted xattrs: root only")
    low = make(tmp_path / "low", {"etc/a": "a", "etc/b": "b", "opt/x/1": "1", "opt/y/2": "2",
                                  "f": "file", "d/inner": "i", "keep": "k"})  # fmt: skip
    top = make(tmp_path / "top", {"etc/b": "WH", "etc/c": "c", "opt/x": "OPQ", "opt/x/3": "3",
                                  "f": None, "f/new": "n", "d": "now a file"})  # fmt: skip
    return [top, low]


def test_merged_view(layers: list[str]) -> None:
    seen = {v.path: v.layer for v in overlay.merged(layers)}
    assert seen == {"d": 0, "etc": 0, "etc/a": 1, "etc/c": 0, "f": 0, "f/new": 0, "keep": 1,
                    "opt": 0, "opt/x": 0, "opt/x/3": 0, "opt/y": 1, "opt/y/2": 1}  # fmt: skip


def test_origins_bottom_first(layers: list[str]) -> None:
    assert overlay.origins(layers, 2) == {"etc/a": 0, "etc/c": 1, "f/new": 1, "keep": 0,
                                          "opt/x/3": 1, "opt/y/2": 0, "d": 1}  # fmt: skip


def test_docker_metadata_rules(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root for security.* xattrs")
    d = tmp_path / "l"
    d.mkdir()
    (d / "cap").write_text("x")
    os.setxattr(d / "cap", "security.capability", bytes.fromhex("0100000200200000" + "00" * 12))
    os.setxattr(d / "cap", "user.other", b"dropped")
    os.utime(d / "cap", ns=(0, 1_700_000_000_999_999_999))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(d / "sock"))
    sock.close()
    (v,) = list(overlay.merged([str(d)]))  # the socket is left out, like docker export
    m = overlay.member(v)
    assert m.mtime_ns == 1_700_000_000_000_000_000
    assert set(m.xattrs) == {"security.capability"}


def test_reuse_only_same_origin(tmp_path: Path, layers: list[str]) -> None:
    prev_root = tmp_path / "prev"
    (prev_root / "etc").mkdir(parents=True)
    (prev_root / "etc/a").write_text("a")
    (prev_root / "keep").write_text("k")
    st = os.stat(layers[1] + "/etc/a")
    a = Entry("f", 0o644, 0, 0, 1, st.st_mtime_ns // 10**9 * 10**9, "digest-a")
    st = os.stat(layers[1] + "/keep")
    k = Entry("f", 0o644, 0, 0, 1, st.st_mtime_ns // 10**9 * 10**9, "digest-k")
    # keep: the previous version took it from another layer (origin 1): never linked
    reuse = Reuse(prev_root, {"etc/a": a, "keep": k}, {"etc/a": 0, "keep": 1}, ["low", "old-top"])
    staging = tmp_path / "staging"
    staging.mkdir()
    w = Writer(staging, reuse=reuse)
    overlay.apply_merged(layers, ["low", "new-top"], w)
    assert (staging / "etc/a").stat().st_ino == (prev_root / "etc/a").stat().st_ino
    assert (staging / "keep").stat().st_ino != (prev_root / "keep").stat().st_ino
    assert w.reused == 1 and w.expected["etc/a"].data == "digest-a"
    assert (staging / "d").read_text() == "now a file"


def test_hard_links_grouped_like_docker(tmp_path: Path) -> None:
    d = tmp_path / "l"
    d.mkdir()
    (d / "f").write_text("x")
    os.link(d / "f", d / "g")
    os.symlink("/target", d / "s")
    os.link(d / "s", d / "t", follow_symlinks=False)  # docker links any non-directory
    staging = tmp_path / "staging"
    staging.mkdir()
    w = Writer(staging)
    overlay.apply_merged([str(d)], ["only"], w)
    entries = w.finish()
    assert (staging / "f").stat().st_ino == (staging / "g").stat().st_ino
    assert os.lstat(staging / "s").st_ino == os.lstat(staging / "t").st_ino
    assert entries["t"].group == "s" and entries["g"].group == "f"
