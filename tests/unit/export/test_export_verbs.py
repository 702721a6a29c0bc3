"""Export service on tar sources: layout, no-op, reuse, leftovers, stale staging, verify, prune."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from netroot.errors import NetrootError
from netroot.export import sources, verbs
from netroot.export.manifest import Layout, Manifest, try_lock
from netroot.export.request import ExportOptions, Source
from netroot.export.tarstream import read_members
from netroot.export.writer import Writer
from tests.unit.export.tarbuild import Spec, tar_bytes, write_tar

CAP = bytes.fromhex("0100000200200000000000000000000000000000")

ROOTFS = [
    Spec("bin", "d", mode=0o755),
    Spec("bin/tool", data=b"tool" * 1000, mode=0o4755),
    Spec("bin/ping", data=b"ping", mode=0o755, xattrs={"security.capability": CAP}),
    Spec("bin/alias", "h", target="bin/tool"),
    Spec("etc", "d"),
    Spec("etc/machine-id", data=b"0123456789abcdef0123456789abcdef\n", mode=0o444),
    Spec("etc/ssh", "d"),
    Spec("etc/ssh/ssh_host_rsa_key", data=b"secret", mode=0o600),
    Spec("etc/ssh/ssh_host_rsa_key.pub", data=b"pub"),
    Spec("etc/ssh/sshd_config", data=b"cfg"),
    Spec(".dockerenv"),
    Spec("data", "d"),
    *[Spec(f"data/f{i}", data=bytes([i]) * (i * 100)) for i in range(20)],
]


def export_tar(tmp_path: Path, specs: list[Spec], tag: str, **kw: object) -> verbs.ExportResult:
    archive = write_tar(tmp_path / f"{tag}.tar", specs)
    info = sources.inspect_archive(archive)
    source = Source(info, lambda w: sources.apply_archive(info, w))
    return verbs.export(source, tmp_path / "root", "img", ExportOptions(**kw))  # type: ignore[arg-type]


def test_layout_manifest_and_noop(tmp_path: Path) -> None:
    r1 = export_tar(tmp_path, ROOTFS, "v1")
    layout = Layout(tmp_path / "root", "img")
    vid = r1.manifest.version
    assert os.readlink(layout.current) == f"versions/{vid}"
    data = json.loads(layout.manifest_path(vid).read_text())
    for key in (
        "image_id",
        "repo_tags",
        "created",
        "files",
        "bytes",
        "tree_hash",
        "netroot_version",
        "leftovers",
    ):
        assert key in data
    assert data["tree_hash"].startswith("sha256:")
    r2 = export_tar(tmp_path, ROOTFS, "v1")
    assert r2.noop and r2.manifest.version == vid and not r2.switched
    assert sorted(p.name for p in layout.versions.iterdir()) == [vid, f"{vid}.json"]


def test_leftovers(tmp_path: Path) -> None:
    m = export_tar(tmp_path, ROOTFS, "v1").manifest
    v = tmp_path / "root/img/current"
    assert not (v / ".dockerenv").exists()
    assert (v / "etc/machine-id").read_bytes() == b""
    assert (v / "etc/machine-id").stat().st_mode & 0o777 == 0o444
    assert not (v / "etc/ssh/ssh_host_rsa_key").exists()
    assert (v / "etc/ssh/sshd_config").exists()
    actions = {c["path"]: c["action"] for c in m.leftovers}
    assert actions["/.dockerenv"] == "removed"
    assert actions["/etc/machine-id"] == "emptied"
    assert actions["/etc/ssh/ssh_host_rsa_key"] == "removed"
    kept = export_tar(tmp_path, ROOTFS, "v1", keep_host_keys=True).manifest
    assert kept.version != m.version
    assert (tmp_path / "root/img/current/etc/ssh/ssh_host_rsa_key").read_bytes() == b"secret"


def test_fidelity_of_metadata(tmp_path: Path) -> None:
    export_tar(tmp_path, ROOTFS, "v1")
    v = tmp_path / "root/img/current"
    st = (v / "bin/tool").stat()
    assert st.st_mode & 0o7777 == 0o4755 and st.st_mtime == 1_600_000_000
    assert st.st_ino == (v / "bin/alias").stat().st_ino
    assert os.getxattr(v / "bin/ping", "security.capability") == CAP


def test_reuse_links_only_identical_files(tmp_path: Path) -> None:
    r1 = export_tar(tmp_path, ROOTFS, "v1")
    changed = [s for s in ROOTFS if s.name not in ("data/f3", "data/f4")]
    changed += [
        Spec("data/f3", data=b"different"),
        Spec("data/f4", data=bytes([4]) * 400, mode=0o600),
    ]
    r2 = export_tar(tmp_path, changed, "v2")
    assert r2.manifest.reused_from == r1.manifest.version
    v1 = tmp_path / "root/img/versions" / r1.manifest.version
    v2 = tmp_path / "root/img/versions" / r2.manifest.version
    assert (v1 / "data/f5").stat().st_ino == (v2 / "data/f5").stat().st_ino
    assert (v1 / "data/f3").stat().st_ino != (v2 / "data/f3").stat().st_ino
    # same content, other mode: must not share the inode (mode is inode metadata)
    assert (v1 / "data/f4").stat().st_ino != (v2 / "data/f4").stat().st_ino
    assert (v2 / "data/f4").stat().st_mode & 0o777 == 0o600
    assert (v1 / "data/f4").stat().st_mode & 0o777 == 0o644
    # a file hard-linked inside v1 is never shared (its group would leak into v2)
    assert (v1 / "bin/tool").stat().st_ino != (v2 / "bin/tool").stat().st_ino
    # 18 data files, ping, sshd_config and the three placeholders (machine-id, hostname, resolv)
    assert r2.manifest.reused_files == 23
    assert verbs.verify(tmp_path / "root", "img", r1.manifest.version)[1] == []
    assert verbs.verify(tmp_path / "root", "img", r2.manifest.version)[1] == []


def test_a_second_writer_of_the_same_name_is_refused_at_once(tmp_path: Path) -> None:
    r1 = export_tar(tmp_path, ROOTFS, "v1")
    layout = Layout(tmp_path / "root", "img")
    held = try_lock(layout)  # what another export or prune (here or on the server) holds
    assert held is not None
    try:
        assert try_lock(layout) is None  # flock: per open file, so this process is refused too
        with pytest.raises(NetrootError, match="exporting or pruning 'img'"):
            export_tar(tmp_path, [*ROOTFS, Spec("new", data=b"n")], "v2")
    finally:
        os.close(held)
    assert verbs.current_id(layout) == r1.manifest.version
    assert os.listdir(layout.staging) == []
    again = try_lock(layout)  # released with its fd
    assert again is not None
    os.close(again)


def test_failure_leaves_current_and_cleans_staging(tmp_path: Path) -> None:
    r1 = export_tar(tmp_path, ROOTFS, "v1")
    archive = write_tar(tmp_path / "v2.tar", [*ROOTFS, Spec("new", data=b"n")])
    info = sources.inspect_archive(archive)

    def boom(w: Writer) -> sources.SourceRead:
        sources.apply_archive(info, w)
        raise OSError(28, "No space left on device")

    with pytest.raises(NetrootError, match="no space left") as err:
        verbs.export(Source(info, boom), tmp_path / "root", "img")
    assert err.value.code == 5
    layout = Layout(tmp_path / "root", "img")
    assert verbs.current_id(layout) == r1.manifest.version
    assert list(layout.staging.iterdir()) == []
    assert [m.version for m in verbs.list_versions(layout)] == [r1.manifest.version]


def test_stale_state_from_a_killed_run_is_cleaned(tmp_path: Path) -> None:
    r1 = export_tar(tmp_path, ROOTFS, "v1")
    layout = Layout(tmp_path / "root", "img")
    (layout.staging / "deadbeefdeadbeef" / "half").mkdir(parents=True)
    (layout.versions / "0123456789abcdef").mkdir()  # renamed in, manifest never written
    (layout.versions / "0123456789abcdef.json.tmp").write_text("{")
    export_tar(tmp_path, [*ROOTFS, Spec("new", data=b"n")], "v2")
    assert list(layout.staging.iterdir()) == []
    names = sorted(p.name for p in layout.versions.iterdir())
    assert "0123456789abcdef" not in names and "0123456789abcdef.json.tmp" not in names
    assert r1.manifest.version in names


def test_verify_finds_tampering(tmp_path: Path) -> None:
    r1 = export_tar(tmp_path, ROOTFS, "v1")
    v = tmp_path / "root/img/current"
    (v / "data/f7").write_bytes(b"tampered")
    os.chmod(v / "bin/ping", 0o777)
    (v / "extra").write_text("x")
    _, diffs = verbs.verify(tmp_path / "root", "img")
    assert "changed /data/f7 (size, mtime_ns, data)" in diffs
    assert any(d.startswith("changed /bin/ping (mode") for d in diffs)
    assert "extra /extra" in diffs
    assert r1.manifest.version


def test_prune_keeps_current_and_protected(tmp_path: Path) -> None:
    ids = [
        export_tar(tmp_path, [*ROOTFS, Spec("n", data=bytes([i]))], f"v{i}").manifest.version
        for i in range(4)
    ]
    verbs.switch_current(Layout(tmp_path / "root", "img"), ids[0])
    removed = verbs.prune_plan(tmp_path / "root", "img", 1, {ids[1]}).remove
    assert removed == [ids[2]]
    left = [m.version for m in verbs.list_versions(Layout(tmp_path / "root", "img"))]
    assert left == [ids[0], ids[1], ids[3]]


def test_pax_and_gnu_long_names_and_binary_xattrs(tmp_path: Path) -> None:
    long = "d" * 120 + "/" + "f" * 150
    blob = bytes(range(256))
    for fmt in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        specs = [Spec(long, data=b"x"), Spec("l", "l", target="/" + long)]
        if fmt == tarfile.PAX_FORMAT:
            specs.append(Spec("x", data=b"", xattrs={"user.bin": blob}))
        got = {m.path: m for m, _ in read_members(io.BytesIO(tar_bytes(specs, fmt)), "t")}
        assert got[long].size == 1 and got["l"].linkname == "/" + long
        if fmt == tarfile.PAX_FORMAT:
            assert got["x"].xattrs == {"user.bin": blob}


def run_nr(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    # No inventory anywhere (NETROOT_HOME is empty): the export root comes from --root.
    env = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
    env |= {"NETROOT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "netroot", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_cli_export_versions_verify_prune(tmp_path: Path) -> None:
    def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_nr(*args, home=tmp_path / "home")

    archive = write_tar(tmp_path / "rootfs.tar", ROOTFS)
    root = str(tmp_path / "root")
    p = run_cli("export", str(archive), "--root", root, "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["name"] == "rootfs" and out["noop"] is False
    again = run_cli("export", str(archive), "--root", root)
    assert again.returncode == 0 and "no-op" in again.stderr
    listed = json.loads(run_cli("versions", "rootfs", "--root", root, "--json").stdout)
    assert listed["current"] == out["version"]
    assert run_cli("verify", f"rootfs@{out['version']}", "--root", root).returncode == 0
    (tmp_path / "root/rootfs/current/bin/tool").unlink()
    bad = run_cli("verify", "rootfs", "--root", root, "--json")
    assert bad.returncode == 3
    assert "missing /bin/tool" in json.loads(bad.stdout)["differences"]
    assert run_cli("prune", "rootfs", "--keep", "1", "--root", root).returncode == 0


def test_cli_bad_inputs(tmp_path: Path) -> None:
    def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_nr(*args, home=tmp_path / "home")

    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"definitely not a tar archive" * 100)
    p = run_cli("export", str(junk), "--root", str(tmp_path / "root"))
    assert p.returncode == 2 and "not a tar" in p.stderr and "hint:" in p.stderr
    assert p.stderr.splitlines()[0].endswith("junk.tar: not a tar archive (invalid header)")
    assert len(p.stderr.splitlines()) == 2  # the error on one line, then the hint
    for cmd in (("versions", "nosuch"), ("prune", "nosuch", "--keep", "1")):
        p = run_cli(*cmd, "--root", str(tmp_path / "root"))
        assert p.returncode == 2 and "no export named 'nosuch'" in p.stderr, p.stderr
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "file").write_text("a file, not a directory")
    p = run_cli("export", str(write_tar(tmp_path / "ok.tar", ROOTFS)), "--root", str(ro / "file"))
    assert p.returncode == 2 and "not writable" in p.stderr
    hostile = write_tar(tmp_path / "evil.tar", [Spec("../../etc/evil", data=b"x")])
    p = run_cli("export", str(hostile), "--root", str(tmp_path / "root"))
    assert p.returncode == 2 and "'../../etc/evil'" in p.stderr


def test_manifest_roundtrip(tmp_path: Path) -> None:
    m = export_tar(tmp_path, ROOTFS, "v1").manifest
    again = Manifest.from_json(m.to_json())
    assert again == m


def test_manifest_summary_skips_the_tables(tmp_path: Path) -> None:
    m = export_tar(tmp_path, ROOTFS, "v1").manifest
    summary = Manifest.from_json(m.to_json(), entries=False)
    assert summary.entries == {} and summary.origins == {}
    assert summary.summary() == m.summary()
    assert Manifest.from_json(m.to_json()).entries == m.entries
