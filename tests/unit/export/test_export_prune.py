"""prune: one order of versions on this host and on the server, why each kept version stays,
and --dry-run writing nothing."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

from netroot.bundle import helper_command
from netroot.export import sources, verbs, versiontree
from netroot.export.manifest import Layout
from netroot.export.request import Source
from tests.unit.export.tarbuild import Spec, write_tar
from tests.unit.export.test_export_verbs import run_nr

ROOTFS = [Spec("etc", "d"), Spec("etc/os-release", data=b"ID=test\n")]


def export_archive(archive: Path, root: Path, name: str = "img") -> verbs.ExportResult:
    info = sources.inspect_archive(archive)
    return verbs.export(Source(info, lambda w: sources.apply_archive(info, w)), root, name)


def _versions(tmp_path: Path, count: int) -> list[str]:
    ids = []
    for i in range(count):
        archive = write_tar(tmp_path / f"v{i}.tar", [*ROOTFS, Spec("n", data=bytes([i]))])
        ids.append(export_archive(archive, tmp_path / "root").manifest.version)
    return ids


def _server_prune(root: Path, keep: int, dry_run: bool, protected: dict[str, list[str]]) -> Any:
    """The server's helper, run as the server runs it (the system python3, no netroot)."""
    args = ["--prune", str(root), "img", str(keep), "1" if dry_run else "0", json.dumps(protected)]
    proc = subprocess.run(
        ["/bin/sh", "-c", helper_command("netroot.remote.export", args)],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under root: its inode metadata (ctime too: any chmod, link or write shows)
    and content, for "nothing was written"."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            data = b""
            if stat.S_ISREG(st.st_mode):
                data = hashlib.sha256(Path(full).read_bytes()).digest()
            meta = (st.st_mode, st.st_ino, st.st_nlink, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            out[os.path.relpath(full, root)] = (*meta, data)
    return out


def test_newest_is_the_manifests_export_time_here_and_on_the_server(tmp_path: Path) -> None:
    ids = _versions(tmp_path, 4)
    layout = Layout(tmp_path / "root", "img")
    # Manifest mtimes in the reverse order (a copy, a restore): the order must not follow them.
    for age, vid in enumerate(ids):
        os.utime(layout.manifest_path(vid), (1_000_000 - age, 1_000_000 - age))
    verbs.switch_current(layout, ids[0])
    why = {ids[1]: ["pinned by pi-01", "last green on pi-02"]}
    here = verbs.prune_plan(layout.root, "img", 1, why, dry_run=True)
    there = _server_prune(layout.root, 1, True, why)["plan"]
    assert here.order == ids == there["order"]
    assert here.remove == [ids[2]] == there["remove"]
    assert (
        here.kept
        == there["kept"]
        == {
            ids[0]: ["current"],
            ids[1]: ["pinned by pi-01", "last green on pi-02"],
            ids[3]: ["among the 1 newest"],
        }
    )


def test_dry_run_writes_nothing_here_nor_on_the_server(tmp_path: Path) -> None:
    ids = _versions(tmp_path, 3)
    root = tmp_path / "root"
    before = snapshot(root)
    assert _server_prune(root, 1, True, {})["pruned"] == ids[:2]
    assert snapshot(root) == before
    p = run_nr("prune", "img", "--keep", "1", "--root", str(root), "--dry-run", home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert snapshot(root) == before
    for vid in ids[:2]:
        assert vid in p.stdout
    assert "would remove" in p.stdout and "among the 1 newest" in p.stdout
    assert "would remove 2 of 3 versions" in p.stderr


def test_prune_says_what_it_kept_and_why(tmp_path: Path) -> None:
    ids = _versions(tmp_path, 3)
    root = tmp_path / "root"
    verbs.switch_current(Layout(root, "img"), ids[0])
    p = run_nr("prune", "img", "--keep", "1", "--root", str(root), "--json", home=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["dry_run"] is False and out["removed"] == [ids[1]]
    assert out["kept"] == {ids[0]: ["current"], ids[2]: ["among the 1 newest"]}
    assert sorted(os.listdir(root / "img" / "versions")) == sorted(
        [ids[0], f"{ids[0]}.json", ids[2], f"{ids[2]}.json"]
    )
    # The server's helper prunes by the same rules, under the lock.
    assert _server_prune(root, 1, False, {})["pruned"] == []


def test_read_head_stops_at_the_tables(tmp_path: Path) -> None:
    ids = _versions(tmp_path, 1)
    layout = Layout(tmp_path / "root", "img")
    head = versiontree.read_head(layout.manifest_path(ids[0]))
    assert versiontree.summary(layout, ids[0]).version == ids[0]
    assert len(head) <= layout.manifest_path(ids[0]).stat().st_size
