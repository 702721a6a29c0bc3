"""Limits of a real filesystem (ext4 here) that an archive can hit: refused naming the member."""

from __future__ import annotations

from pathlib import Path

import pytest

from netroot.errors import NetrootError
from tests.unit.export.edgekit import GOOD, assert_refused, export_file
from tests.unit.export.tarbuild import Spec, write_tar

pytestmark = pytest.mark.integration

EXT4_MAX_LINKS = 65000


def test_more_hard_links_than_the_filesystem_allows(tmp_path: Path) -> None:
    links = [Spec(f"h{i}", "h", target="f") for i in range(EXT4_MAX_LINKS)]
    archive = write_tar(tmp_path / "links.tar", [*GOOD, Spec("f", data=b"x"), *links])
    try:
        export_file(archive, tmp_path / "probe-root")
    except NetrootError:
        pass  # ext4 (or less): the refusal is checked below
    else:
        pytest.skip("this filesystem allows more than 65000 links to one file")
    # 65001 names of one inode: the last link is the one the filesystem refuses
    assert_refused(tmp_path, archive, f"'h{EXT4_MAX_LINKS - 1}'", "more hard links")
