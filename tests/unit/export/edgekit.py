"""Shared checks for the export's edge tests: a refusal is clean and leaves nothing behind."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from netroot.errors import Exit, NetrootError
from netroot.export import sources, verbs
from netroot.export.manifest import Layout
from netroot.export.request import Source
from tests.unit.export.tarbuild import Spec, write_tar

GOOD = [Spec("bin", "d", mode=0o755), Spec("bin/sh", data=b"#!sh\n", mode=0o755)]


def export_file(archive: Path, root: Path, name: str = "img") -> verbs.ExportResult:
    info = sources.inspect_archive(archive)
    return verbs.export(Source(info, lambda w: sources.apply_archive(info, w)), root, name)


def good_version(tmp_path: Path) -> str:
    """Export a small good tree first, so a refusal can be checked to leave `current` alone."""
    return export_file(write_tar(tmp_path / "good.tar", GOOD), tmp_path / "root").manifest.version


def assert_refused(tmp_path: Path, archive: Path, *needles: str) -> str:
    """Export `archive` over a good version: a usage error (exit 2) on one line containing
    every needle; `current` unchanged, no staging or partial version left."""
    before = good_version(tmp_path)
    with pytest.raises(NetrootError) as err:
        export_file(archive, tmp_path / "root")
    message = err.value.message
    assert err.value.code == Exit.USAGE, message
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message
    layout = Layout(tmp_path / "root", "img")
    assert verbs.current_id(layout) == before
    assert list(layout.staging.iterdir()) == []
    assert sorted(p.name for p in layout.versions.iterdir()) == [before, f"{before}.json"]
    return message


def raw_tar(members: list[tuple[tarfile.TarInfo, bytes]], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    """A tar of TarInfos as given (pax headers, numbers, types untouched by any filter)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for ti, data in members:
            tar.addfile(ti, io.BytesIO(data) if ti.isreg() else None)
    return buf.getvalue()


def info(name: str, kind: bytes = tarfile.REGTYPE, /, **pax: str) -> tarfile.TarInfo:
    """A member with no data and the given raw pax records."""
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.size = 0
    ti.mode = 0o644
    ti.mtime = 1_600_000_000
    if pax:
        ti.pax_headers = dict(pax)
    return ti
