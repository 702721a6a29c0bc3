"""`docker save` archives applied layer by layer: whiteouts, opaque dirs, replacements."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netroot.export import sources, verbs
from netroot.export.members import UnsafeMember
from netroot.export.request import Source
from tests.unit.export.tarbuild import Spec, write_docker_save

BASE = [
    Spec("etc", "d", mode=0o755),
    Spec("etc/keep", data=b"keep"),
    Spec("etc/gone", data=b"gone"),
    Spec("var", "d"),
    Spec("var/cache", "d"),
    Spec("var/cache/a", data=b"a"),
    Spec("var/cache/sub", "d"),
    Spec("var/cache/sub/b", data=b"b"),
    Spec("opt", "d"),
    Spec("opt/dir", "d"),
    Spec("opt/dir/x", data=b"x"),
    Spec("opt/file", data=b"file"),
    Spec("lnk", "l", target="/etc"),
]
TOP = [
    Spec("etc", "d", mode=0o700, mtime=1_700_000_000),
    Spec("etc/.wh.gone"),
    Spec("etc/new", data=b"new"),
    Spec("var/cache", "d"),
    # Sorted before the opaque marker in the stream: it must survive the marker.
    Spec("var/cache/-early", data=b"early"),
    Spec("var/cache/.wh..wh..opq"),
    Spec("var/cache/c", data=b"c"),
    Spec("opt/dir", data=b"now a file"),  # a file hiding a whole lower directory
    Spec("opt/file", "d"),  # and a directory replacing a file
    Spec("opt/file/inside", data=b"i"),
    Spec(".wh.lnk"),
    Spec("lnk/.wh.passwd"),  # a whiteout below a (removed) symlink touches nothing outside
]


def export_save(tmp_path: Path, layers: list[list[Spec]]) -> Path:
    archive = write_docker_save(tmp_path / "save.tar", layers, ["test/layers:1"])
    info = sources.inspect_archive(archive)
    assert info.kind == "docker-save"
    assert info.repo_tags == ["test/layers:1"]
    source = Source(info, lambda w: sources.apply_archive(info, w))
    result = verbs.export(source, tmp_path / "root", "layers")
    return tmp_path / "root" / "layers" / "versions" / result.manifest.version


def test_whiteouts_and_opaque_dirs(tmp_path: Path) -> None:
    v = export_save(tmp_path, [BASE, TOP])
    files = sorted(str(Path(d, n).relative_to(v)) for d, ds, fs in os.walk(v) for n in ds + fs)
    assert files == [
        "etc",
        "etc/hostname",
        "etc/keep",
        "etc/new",
        "etc/resolv.conf",
        "opt",
        "opt/dir",
        "opt/file",
        "opt/file/inside",
        "var",
        "var/cache",
        "var/cache/-early",
        "var/cache/c",
    ]
    assert (v / "opt/dir").read_bytes() == b"now a file"
    assert (v / "etc").stat().st_mode & 0o777 == 0o700
    assert (v / "etc").stat().st_mtime == 1_700_000_000


def test_whiteout_through_symlink_is_harmless(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("do not delete")
    layers = [[Spec("l", "l", target=str(tmp_path))], [Spec("l/.wh.victim")]]
    export_save(tmp_path, layers)
    assert victim.read_text() == "do not delete"


def test_layer_writing_through_lower_symlink_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    layers = [[Spec("l", "l", target=str(outside))], [Spec("l/pwned", data=b"x")]]
    with pytest.raises(UnsafeMember, match="l/pwned"):
        export_save(tmp_path, layers)
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "root" / "layers" / "current").exists()
    assert list((tmp_path / "root" / "layers" / ".staging").iterdir()) == []
