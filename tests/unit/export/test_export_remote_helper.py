"""The server-side helper of a remote export, run as the server runs it: the command netroot
sends (the system python3, the helper's modules in its `-c` argument, no netroot installed),
speaking its JSON-line protocol.
Plus the local commit's both-or-neither rule and the control side's pure parts."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from netroot.adapters import serverssh as adapter
from netroot.bundle import helper_command
from netroot.export import serverroot, sources, verbs, versiontree
from netroot.export.manifest import Layout
from netroot.export.request import Source
from netroot.inventory import Host, NfsServer
from netroot.sshtarget import target_for
from tests.unit.export.tarbuild import Spec, write_tar

PYTHON = "/usr/bin/python3"
ROOTFS = [
    Spec("bin", "d", mode=0o755),
    Spec("bin/tool", data=b"tool" * 1000, mode=0o4755),
    Spec("bin/alias", "h", target="bin/tool"),
    Spec("etc", "d"),
    Spec("etc/os-release", data=b"ID=test\n"),
    Spec("etc/link", "l", target="/etc/os-release"),
]


def _build(tmp_path: Path, specs: list[Spec], tag: str) -> verbs.ExportResult:
    archive = write_tar(tmp_path / f"{tag}.tar", specs)
    info = sources.inspect_archive(archive)
    apply = lambda w: sources.apply_archive(info, w)  # noqa: E731
    return verbs.export(Source(info, apply), tmp_path / "mirror", "img")


class Helper:
    def __init__(self, root: Path, vid: str, name: str = "img", mode: str = "") -> None:
        # The very command the server runs (netroot.bundle), python3 found on this PATH.
        args = [mode, str(root), name, vid] if mode else [str(root), name, vid]
        command = helper_command("netroot.remote.export", args)
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            env={"PATH": "/usr/bin:/bin"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.hello = self.read()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read() if self.proc.stderr else b""
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(
        self, request: dict[str, Any], payload: bytes = b"", last: bool = True
    ) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n" + payload)
        self.proc.stdin.flush()
        reply = self.read()
        if last:
            self.proc.wait(timeout=30)
        return reply

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def _copy_tree(src: Path, dest: Path) -> None:
    # What rsync -aHAX does, done here by cp -a (same owners, modes, links, xattrs).
    subprocess.run(["cp", "-a", "--preserve=all", f"{src}/.", str(dest)], check=True)


def _commit(helper: Helper, mirror: Layout, vid: str, **request: Any) -> dict[str, Any]:
    text = mirror.manifest_path(vid).read_bytes()
    return helper.send({"op": "commit", "manifest_bytes": len(text), **request}, text)


@pytest.mark.skipif(not Path(PYTHON).exists(), reason="no system python3")
def test_commit_verifies_on_the_server_then_switches(tmp_path: Path) -> None:
    built = _build(tmp_path, ROOTFS, "v1")
    vid = built.manifest.version
    mirror = Layout(tmp_path / "mirror", "img")
    server = tmp_path / "server"
    helper = Helper(server, vid)
    assert helper.hello["ok"] and not helper.hello["exists"] and helper.hello["bases"] == []
    staged = Path(helper.hello["staging"])
    # Nothing visible while staged.
    assert os.listdir(server / "img" / "versions") == []
    _copy_tree(mirror.version_dir(vid), staged)
    done = _commit(helper, mirror, vid, switch=True)
    assert done == {"ok": True, "switched": True, "pruned": [], "current": vid}
    layout = Layout(server, "img")
    assert os.readlink(layout.current) == f"versions/{vid}"
    assert sorted(os.listdir(layout.versions)) == [vid, f"{vid}.json"]
    assert os.listdir(layout.staging) == []
    assert os.stat(layout.base).st_mode & 0o777 == 0o700
    # Again: the version exists, the helper says so and a finish only switches / prunes.
    again = Helper(server, vid)
    assert again.hello["exists"] and json.loads(again.hello["manifest"])["version"] == vid
    assert again.send({"op": "finish", "switch": True})["switched"] is False
    # The next version gets link-dest bases: current first.
    v2 = _build(tmp_path, [*ROOTFS, Spec("etc/new", data=b"n")], "v2").manifest.version
    third = Helper(server, v2)
    assert third.hello["bases"] == [str(layout.version_dir(vid))]
    _copy_tree(mirror.version_dir(v2), Path(third.hello["staging"]))
    staged_new = Path(third.hello["staging"]) / "etc" / "new"
    st = staged_new.stat()
    staged_new.write_bytes(b"N")  # same size and mtime, other bytes: only a hash sees it
    os.utime(staged_new, ns=(st.st_mtime_ns, st.st_mtime_ns))
    refused = _commit(third, mirror, v2, switch=False, keep=1)
    assert not refused["ok"] and any("etc/new" in d for d in refused["differences"])
    third = Helper(server, v2)
    if shutil.which("rsync"):  # as the control host sends it: unchanged files hard-linked
        subprocess.run(
            ["rsync", "-aHAX", "--numeric-ids", f"--link-dest={third.hello['bases'][0]}",
             f"{mirror.version_dir(v2)}/", f"{third.hello['staging']}/"],
            check=True,
        )  # fmt: skip
        linked = Path(third.hello["staging"]) / "etc" / "os-release"
        assert (
            linked.stat().st_ino == (layout.version_dir(vid) / "etc" / "os-release").stat().st_ino
        )
    else:
        _copy_tree(mirror.version_dir(v2), Path(third.hello["staging"]))
    done = _commit(third, mirror, v2, switch=False, keep=1)
    # keep=1 keeps the newest (v2) and current (v1): nothing pruned; current did not move.
    assert done["switched"] is False and done["pruned"] == [] and done["current"] == vid


@pytest.mark.skipif(not Path(PYTHON).exists(), reason="no system python3")
def test_tampered_tree_is_never_committed(tmp_path: Path) -> None:
    vid = _build(tmp_path, ROOTFS, "v1").manifest.version
    mirror = Layout(tmp_path / "mirror", "img")
    helper = Helper(tmp_path / "server", vid)
    staged = Path(helper.hello["staging"])
    _copy_tree(mirror.version_dir(vid), staged)
    os.chmod(staged / "bin" / "tool", 0o755)  # setuid lost in transit
    done = _commit(helper, mirror, vid, switch=True)
    assert not done["ok"] and any("bin/tool" in d for d in done["differences"])
    layout = Layout(tmp_path / "server", "img")
    assert os.listdir(layout.versions) == [] and not layout.current.is_symlink()
    assert os.listdir(layout.staging) == []  # a resumed run must not trust it


@pytest.mark.skipif(not Path(PYTHON).exists(), reason="no system python3")
def test_eof_keeps_staging_for_resume_and_lock_is_exclusive(tmp_path: Path) -> None:
    vid = _build(tmp_path, ROOTFS, "v1").manifest.version
    server = tmp_path / "server"
    first = Helper(server, vid)
    (Path(first.hello["staging"]) / "partial").write_bytes(b"x")
    second = Helper(server, vid)
    assert second.hello.get("busy") and second.proc.wait(timeout=30) == 1
    assert first.close() == 0  # the control host went away
    layout = Layout(server, "img")
    assert os.listdir(layout.versions) == []
    third = Helper(server, vid)  # the lock died with the first session; staging kept
    assert (Path(third.hello["staging"]) / "partial").exists()
    third.close()
    bad = Helper(server, "../../etc")
    assert not bad.hello["ok"] and "bad root" in bad.hello["error"]


def test_local_manifest_disk_full_leaves_nothing_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v1 = _build(tmp_path, ROOTFS, "v1").manifest.version
    real = versiontree.atomic_write  # type: ignore[attr-defined]

    def full(path: Path, data: bytes | str, **kw: Any) -> None:
        if str(path).endswith(".json"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data, **kw)

    monkeypatch.setattr(versiontree, "atomic_write", full)
    with pytest.raises(Exception, match="no space left"):
        _build(tmp_path, [*ROOTFS, Spec("etc/new", data=b"n")], "v2")
    layout = Layout(tmp_path / "mirror", "img")
    # The version and its manifest appear together or not at all: here, not at all.
    assert sorted(os.listdir(layout.versions)) == [v1, f"{v1}.json"]
    assert os.listdir(layout.staging) == []
    assert os.readlink(layout.current) == f"versions/{v1}"


def test_ssh_and_stats() -> None:
    host = Host(
        "nfs-01",
        {
            "ansible_host": "10.0.0.2",
            "ansible_user": "pi",
            "ansible_become": True,
            "netroot_known_hosts": "/k h",
            "netroot_export_remote": True,
        },
        frozenset({"nfs_servers"}),
    )
    target = target_for(host)
    argv = adapter.ssh_argv(target)
    assert "StrictHostKeyChecking=yes" in argv and "BatchMode=yes" in argv
    assert 'UserKnownHostsFile="/k h"' in argv and 'User="pi"' in argv
    stats = adapter.parse_stats("Total bytes sent: 1,234,567\nLiteral data: 42 bytes\n")
    assert stats == {"total bytes sent": 1234567, "literal data": 42}
    server = NfsServer(host, "/srv/netroot", "kernel", "10.0.0.2", remote=True)
    assert serverroot.remote_target(server).sudo
    nobecome = NfsServer(Host("s", {"ansible_user": "pi"}, frozenset()), "/x", "kernel", "1.2.3.4")
    with pytest.raises(Exception, match="needs root on the server"):
        serverroot.remote_target(nobecome)


def test_rsync_progress_lines_drive_the_bar() -> None:
    chunks = iter(
        [
            b"      1,024   0%    0.00kB/s    0:00:00 (xfr#1, to-chk=9/11)\r  ",
            b"   2,097,152  50%   10.00MB/s    0:00:01 (xfr#4, to-chk=2/11)\r",
            b"\nNumber of files: 11\nTotal bytes sent: 2,100,000\n",
        ]
    )
    seen: list[tuple[int, int]] = []
    out = adapter._follow(lambda: next(chunks, b""), lambda b, f: seen.append((b, f)))
    assert seen == [(1024, 1), (2_097_152, 4)]
    assert adapter.parse_stats(out)["total bytes sent"] == 2_100_000


@pytest.mark.parametrize(
    ("rc", "stderr", "code", "words"),
    [
        (255, "root@10.0.0.2: Permission denied (publickey).\n", 4, "Permission denied"),
        (255, "ssh: connect to host 10.0.0.2 port 22: No route to host\n", 4, "powered off"),
        (255, "ssh: connect to host 10.0.0.2 port 22: Connection refused\n", 4, "sshd running"),
        (255, "ssh: connect to host 10.0.0.2 port 22: Connection timed out\n", 4, "too busy"),
        (12, "Host key verification failed.\nrsync error: unexplained (code 12)\n", 4, "Host key"),
        (1, "sudo: a password is required\n", 2, "password"),
        (1, "sudo: rsync: command not found\nrsync: connection unexpectedly closed\n", 5, "rsync"),
        (2, "Unknown option: -P\nusage: python3 [option]\n", 5, "python3"),
        (11, "rsync: write failed on x: No space left on device (28)\n", 5, "no space left"),
        (23, "rsync: some other trouble\n", 1, "some other trouble"),
    ],
)
def test_ssh_failures_become_one_line(rc: int, stderr: str, code: int, words: str) -> None:
    target = target_for(Host("nfs-01", {"ansible_host": "10.0.0.2"}, frozenset()))
    exc = adapter.ssh_failure(target, "sending", rc, stderr)
    assert int(exc.code) == code
    assert words in exc.message + exc.hint and "\n" not in exc.message


@pytest.mark.skipif(not Path(PYTHON).exists(), reason="no system python3")
def test_collisions_names_same_size_and_time_with_other_bytes(tmp_path: Path) -> None:
    v1 = _build(tmp_path, ROOTFS, "v1").manifest.version
    mirror = Layout(tmp_path / "mirror", "img")
    server = tmp_path / "server"
    first = Helper(server, v1)
    _copy_tree(mirror.version_dir(v1), Path(first.hello["staging"]))
    assert _commit(first, mirror, v1, switch=True)["ok"]
    # v2: os-release and the hard-linked tool keep their size and mtime, not their bytes.
    changed = [
        Spec("etc/os-release", data=b"ID=tesT\n") if s.name == "etc/os-release" else s
        for s in ROOTFS
    ]
    changed[1] = Spec("bin/tool", data=b"TOOL" * 1000, mode=0o4755)
    v2 = _build(tmp_path, changed, "v2").manifest.version
    second = Helper(server, v2)
    text = mirror.manifest_path(v2).read_bytes()
    reply = second.send({"op": "collisions", "manifest_bytes": len(text)}, text, last=False)
    assert reply["paths"] == ["bin/alias", "bin/tool", "etc/os-release"]
    assert second.close() == 0


def test_the_helper_fits_in_one_argument_and_names_only_helpers() -> None:
    """ssh hands the command to the server's shell as one argument (sudo's sh -c too): Linux
    refuses one over 128 KiB (MAX_ARG_STRLEN) with E2BIG."""
    target = target_for(Host("nfs-01", {"ansible_become": True}, frozenset()))
    for module in ("netroot.remote.export", "netroot.remote.fleet"):
        command = target.privileged(helper_command(module, ["/srv/netroot", "img", "0" * 16]))
        assert len(command.encode()) < 128 * 1024 // 2  # half the cap: room to grow
    with pytest.raises(ValueError, match="not a helper"):
        helper_command("netroot.remote.tree", [])


@pytest.mark.skipif(not Path(PYTHON).exists(), reason="no system python3")
def test_the_servers_repair_puts_damaged_paths_back_in_place(tmp_path: Path) -> None:
    """--repair on the server: damaged paths named, the good copy of those sent (by cp here,
    rsync --files-from in a real export), checked, put back in the same inodes."""
    mirror = Layout(tmp_path / "mirror", "img")
    vid = _build(tmp_path, ROOTFS, "v1").manifest.version
    server = Layout(tmp_path / "server", "img")
    server.versions.mkdir(parents=True)
    _copy_tree(mirror.versions, server.versions)
    version = server.version_dir(vid)
    inode = os.lstat(version / "bin/tool").st_ino
    with open(version / "bin/tool", "r+b") as f:
        f.write(b"X")
    os.utime(version / "bin/tool", ns=(0, 1_600_000_000 * 10**9))
    (version / "etc/extra").write_text("x")
    helper = Helper(server.root, vid, mode="--repair")
    assert helper.hello["damaged"] == ["bin/alias", "bin/tool", "etc", "etc/extra"]
    assert helper.hello["send"] == ["bin/alias", "bin/tool", "etc"]
    staging = Path(helper.hello["staging"])
    for path in helper.hello["send"]:
        subprocess.run(
            ["cp", "-a", "--preserve=all", "--parents", path, str(staging)],
            cwd=mirror.version_dir(vid),
            check=True,
        )
    done = helper.send({"op": "repair"})
    assert done["ok"] and done["remaining"] == [], done
    assert "rewrote /bin/tool in place" in done["done"] and "removed /etc/extra" in done["done"]
    assert os.lstat(version / "bin/tool").st_ino == inode
    assert not staging.exists()
    again = Helper(server.root, vid, mode="--repair")
    assert again.hello["damaged"] == [] and again.close() == 0
