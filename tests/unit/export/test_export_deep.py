"""Deep trees, hard links under unlisted parents, and who may traverse the export tree."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from netroot.errors import NetrootError
from netroot.export import overlay, verbs
from netroot.export.manifest import Layout
from tests.unit.export.edgekit import GOOD, export_file
from tests.unit.export.tarbuild import Spec, write_docker_save, write_tar

DEPTH = 2000


@pytest.fixture
def short() -> Iterator[Path]:
    """A short scratch dir: 2000 levels of 'd/' leave room for a root of ~90 bytes only."""
    path = Path(tempfile.mkdtemp(prefix="nr", dir="/tmp"))
    yield path
    from netroot.export.fstree import remove_tree

    remove_tree(str(path))


def mkdeep(base: Path, depth: int) -> str:
    """depth nested dirs 'd' under base, made level by level (os.makedirs recurses)."""
    rel = ""
    for _ in range(depth):
        rel = f"{rel}/d" if rel else "d"
        (base / rel).mkdir()
    return rel


def deep_specs(depth: int = DEPTH) -> list[Spec]:
    names = ["/".join(["d"] * i) for i in range(1, depth + 1)]
    return [*(Spec(n, "d", mode=0o755) for n in names), Spec(names[-1] + "/bottom", data=b"deep")]


def test_a_2000_deep_tree_exports_verifies_and_prunes(short: Path) -> None:
    tmp_path = short
    root = tmp_path / "r"
    deep = export_file(write_tar(tmp_path / "deep.tar", deep_specs()), root)
    bottom = "/".join(["d"] * DEPTH) + "/bottom"
    assert deep.manifest.entries[bottom].size == 4
    assert verbs.verify(root, "img")[1] == []
    export_file(write_tar(tmp_path / "good.tar", GOOD), root)
    assert verbs.prune_plan(root, "img", 1, set()).remove == [deep.manifest.version]
    assert not Layout(root, "img").version_dir(deep.manifest.version).exists()
    again = export_file(tmp_path / "deep.tar", root)  # pruned, so exported anew
    assert not again.noop and verbs.verify(root, "img")[1] == []


def test_a_failure_deep_inside_cleans_up(short: Path) -> None:
    tmp_path = short
    root = tmp_path / "r"
    bad = write_tar(tmp_path / "bad.tar", [*deep_specs(), Spec("../escape", data=b"x")])
    with pytest.raises(NetrootError, match=r"'\.\./escape'") as err:
        export_file(bad, root)
    assert err.value.code == 2
    layout = Layout(root, "img")
    assert list(layout.staging.iterdir()) == []
    assert export_file(write_tar(tmp_path / "good.tar", GOOD), root).manifest.files > 0


def test_deep_stale_staging_of_a_killed_run_is_removed(tmp_path: Path) -> None:
    root = tmp_path / "r"
    export_file(write_tar(tmp_path / "good.tar", GOOD), root)
    layout = Layout(root, "img")
    fd = os.open(layout.staging, os.O_RDONLY)
    try:  # build it relative to a dir fd: the full path would pass PATH_MAX
        os.mkdir("killed", dir_fd=fd)
        rel = "killed"
        for _ in range(1900):
            rel += "/d"
            os.mkdir(rel, dir_fd=fd)
    finally:
        os.close(fd)
    export_file(write_tar(tmp_path / "v2.tar", [*GOOD, Spec("new", data=b"n")]), root)
    assert list(layout.staging.iterdir()) == []


def test_merged_layer_dirs_walk_deep_trees(short: Path) -> None:
    # (in `short`, removed without recursion: pytest's own cleanup would recurse)
    top, low = short / "top", short / "low"
    top.mkdir()
    low.mkdir()
    rel = mkdeep(low, 1500)
    mkdeep(top, 1500)
    (top / rel / "f").write_bytes(b"x")
    paths = [v.path for v in overlay.merged([str(top), str(low)])]
    assert len(paths) == 1501 and paths[-1] == rel + "/f"


HARDLINKS_NO_PARENTS = [  # as GNU tar --no-recursion writes them: no directory members
    Spec("a/b/f", data=b"shared"),
    Spec("c/d/h", "h", target="a/b/f"),
    Spec("c/d/h2", "h", target="a/b/f"),
    Spec("c/e", "h", target="c/d/h"),
]


def test_hard_links_whose_parents_are_never_listed(tmp_path: Path) -> None:
    result = export_file(write_tar(tmp_path / "l.tar", HARDLINKS_NO_PARENTS), tmp_path / "r")
    v = tmp_path / "r/img/versions" / result.manifest.version
    inodes = {(v / p).stat().st_ino for p in ("a/b/f", "c/d/h", "c/d/h2", "c/e")}
    assert len(inodes) == 1 and (v / "c/d").is_dir()
    assert verbs.verify(tmp_path / "r", "img")[1] == []


def test_whiteout_of_a_parent_never_listed_is_honoured(tmp_path: Path) -> None:
    layers = [HARDLINKS_NO_PARENTS, [Spec(".wh.c")], [Spec("a/.wh.b")]]
    path = write_docker_save(tmp_path / "s.tar", layers[:2], ["img:1"])
    result = export_file(path, tmp_path / "r")
    v = tmp_path / "r/img/versions" / result.manifest.version
    assert not (v / "c").exists() and (v / "a/b/f").read_bytes() == b"shared"
    assert not [p for p in result.manifest.entries if p.startswith("c")]
    path = write_docker_save(tmp_path / "s3.tar", layers, ["img:1"])
    result = export_file(path, tmp_path / "r")
    assert not [p for p in result.manifest.entries if p.startswith(("c", "a/"))]


def test_the_export_tree_is_not_traversable_by_other_users(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (to be the NFS server's user and to switch to nobody)")
    specs = [*GOOD, Spec("bin/id", data=b"#!/bin/sh\nid -u\n", mode=0o4755)]
    result = export_file(write_tar(tmp_path / "suid.tar", specs), tmp_path / "r")
    base = tmp_path / "r/img"
    assert base.stat().st_mode & 0o777 == 0o700
    tmp_path.chmod(0o755)  # pytest's own dirs must not be what stops nobody
    (tmp_path / "r").chmod(0o755)
    suid = base / "versions" / result.manifest.version / "bin/id"
    assert suid.stat().st_mode & 0o4000  # the setuid bit is exported exactly ...
    for probe in (["test", "-e", str(suid)], ["ls", str(base / "current/")]):
        # ... but a local account cannot reach it; root (the NFS server) can.
        assert subprocess.run(probe, user=65534, capture_output=True).returncode != 0
        assert subprocess.run(probe, capture_output=True).returncode == 0
