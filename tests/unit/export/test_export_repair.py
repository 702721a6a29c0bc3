"""The way back from a damaged version: `verify` names `export SOURCE --repair`, which puts the
version back in place (same inodes: boards keep their mounts), here and by the server's
helper (run as the server runs it)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from netroot.errors import Exit, NetrootError
from netroot.export import repair, sources, verbs
from netroot.export.manifest import Layout, Manifest
from netroot.export.request import Source
from netroot.export.scan import scan
from tests.unit.export.tarbuild import Spec, write_tar
from tests.unit.export.test_export_prune import export_archive
from tests.unit.export.test_export_verbs import run_nr

ROOTFS = [
    Spec("bin", "d", mode=0o755),
    Spec("bin/tool", data=b"tool" * 5000, mode=0o4755),
    Spec("bin/alias", "h", target="bin/tool"),
    Spec("etc", "d"),
    Spec("etc/os-release", data=b"ID=test\n"),
    Spec("etc/link", "l", target="/etc/os-release"),
    Spec("dev", "d"),
    Spec("dev/null", "c", mode=0o666),
    Spec("var", "d"),
    Spec("var/gone", data=b"this file will be deleted\n"),
]


def flip(path: Path, offset: int) -> None:
    """One byte changed in place, the file's time put back (a disk's fault, not a write)."""
    st = os.lstat(path)
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x01]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _damage(version: Path) -> None:
    flip(version / "bin/tool", 1234)  # hard-linked: both names damaged
    os.chmod(version / "etc/os-release", 0o600)
    (version / "var/gone").unlink()
    (version / "var/extra").write_bytes(b"not in the manifest\n")
    os.unlink(version / "etc/link")
    os.symlink("/elsewhere", version / "etc/link")


def test_verify_names_the_repair_and_the_repair_puts_the_version_back(tmp_path: Path) -> None:
    archive = write_tar(tmp_path / "rootfs.tar", ROOTFS)
    root = tmp_path / "root"
    vid = export_archive(archive, root, "rootfs").manifest.version
    version = Layout(root, "rootfs").version_dir(vid)
    inode = os.lstat(version / "bin/tool").st_ino
    _damage(version)
    bad = run_nr("verify", "rootfs", "--root", str(root), home=tmp_path)
    assert bad.returncode == 3, bad.stderr
    hint = bad.stderr.strip().splitlines()[-1]
    command = hint[hint.index("netroot export") :]
    assert command == f"netroot export {archive} --name rootfs --repair --root {root}"
    fixed = run_nr(*shlex.split(command)[1:], home=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert "rewrote /bin/tool in place" in fixed.stdout
    assert "removed /var/extra" in fixed.stdout and "recreated /var/gone" in fixed.stdout
    good = run_nr("verify", "rootfs", "--root", str(root), home=tmp_path)
    assert good.returncode == 0, good.stderr
    # The damaged file was put back in its own inode: an NFS client's handle stays good.
    assert os.lstat(version / "bin/tool").st_ino == inode
    assert os.lstat(version / "bin/alias").st_ino == inode
    # Nothing else moved: current, no staging left, and a second repair has nothing to do.
    assert os.readlink(root / "rootfs/current") == f"versions/{vid}"
    assert os.listdir(root / "rootfs/.staging") == []
    again = run_nr(*shlex.split(command)[1:], "--json", home=tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["repaired"] == []


def test_repair_of_a_version_that_is_not_there(tmp_path: Path) -> None:
    archive = write_tar(tmp_path / "rootfs.tar", ROOTFS)
    p = run_nr("export", str(archive), "--repair", "--root", str(tmp_path / "r"), home=tmp_path)
    assert p.returncode == 2 and "to repair" in p.stderr, p.stderr
    assert not (tmp_path / "r" / "rootfs" / "versions").exists() or not os.listdir(
        tmp_path / "r" / "rootfs" / "versions"
    )


def test_a_good_copy_that_differs_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    """The source no longer gives the version's tree where it is damaged: refused, untouched."""
    archive = write_tar(tmp_path / "rootfs.tar", ROOTFS)
    layout = Layout(tmp_path / "root", "rootfs")
    vid = export_archive(archive, layout.root, "rootfs").manifest.version
    version = layout.version_dir(vid)
    flip(version / "etc/os-release", 0)
    manifest = Manifest.from_json(layout.manifest_path(vid).read_text())
    other = tmp_path / "other"
    export_archive(
        write_tar(tmp_path / "o.tar", [*ROOTFS[:4], Spec("etc/os-release", data=b"ID=else\n")]),
        other,
        "rootfs",
    )
    good = scan(str(next((other / "rootfs/versions").glob("*[!n]"))))
    paths = repair.damaged(manifest.entries, scan(str(version)))
    assert paths == ["etc/os-release"]
    assert repair.check_good(paths, manifest.entries, good) == ["etc/os-release"]
    # End to end: the repair given a source that writes that other tree under this id.
    info = sources.inspect_archive(archive)
    elsewhere = sources.inspect_archive(tmp_path / "o.tar")
    # (Entries, not inodes: the fresh build hard-links intact files, which moves their ctime.)
    before = scan(str(version))
    with pytest.raises(NetrootError, match=r"does not give rootfs@.* at 1 of its damaged") as err:
        wrong = Source(info, lambda w: sources.apply_archive(elsewhere, w))
        verbs.repair(wrong, layout.root, "rootfs")
    assert err.value.code == Exit.CHECKS
    assert verbs.verify(layout.root, "rootfs")[1]  # still damaged, and untouched
    assert scan(str(version)) == before
    assert os.listdir(layout.staging) == []
