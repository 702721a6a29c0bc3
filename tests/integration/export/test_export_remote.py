"""`netroot export` to an NFS server that is another host: a real sshd (in a network namespace),
rsync and the server-side helper over SSH, verified and committed on the server.

The namespace shares this machine's filesystem, so the test reads the server's export root
directly to check what landed there; everything the export does goes through SSH.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from netroot.export.manifest import Manifest
from netroot.export.scan import scan
from tests.integration.export.rootfs_gen import write_bulk_rootfs, write_fidelity_rootfs
from tests.integration.provision_hosts import NEEDS_HOSTS, NetnsHost, netns_host, write_inventory

pytestmark = [
    *NEEDS_HOSTS,
    pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed"),
]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("srv")) as h:
        yield h


@dataclass
class Remote:
    host: NetnsHost
    work: Path
    inventory: Path
    root: Path  # the server's export root (read here only to check)
    lib: Path  # the server's netroot lib dir: configured, never written by an export

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
        return base | {
            "NETROOT_HOME": str(self.work / "home"),
            "NETROOT_CACHE": str(self.work / "cache"),
            "NO_COLOR": "1",
        }

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "netroot", "-i", str(self.inventory), *args]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), capture_output=True, text=True, env=self.env(), timeout=600
        )

    def export(self, source: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.run("export", str(source), "--name", "img", "--json", *extra)

    def visible(self) -> tuple[str | None, list[str]]:
        base = self.root / "img"
        try:
            current: str | None = os.readlink(base / "current")
        except OSError:
            current = None
        versions = base / "versions"
        return current, sorted(os.listdir(versions)) if versions.is_dir() else []


def _remote(host: NetnsHost, work: Path, **server_vars: Any) -> Remote:
    work.mkdir(parents=True, exist_ok=True)
    root, lib = work / "server-root", work / "server-lib"
    server = {
        "ansible_host": host.address,
        "netroot_export_remote": True,
        "netroot_export_root": str(root),
        "netroot_nfs_server_lib_dir": str(lib),
        **host.inventory_vars(),
        **server_vars,
    }
    inventory = write_inventory(
        work / "inventory.yml",
        {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": server}}}}},
    )
    return Remote(host, work, inventory, root, lib)


@pytest.fixture
def remote(host: NetnsHost, tmp_path: Path) -> Remote:
    return _remote(host, tmp_path / "remote")


@pytest.fixture(scope="module")
def fidelity_tar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tars") / "fidelity.tar"
    write_fidelity_rootfs(path)
    return path


def _changed(base: Path, out: Path, path: str, data: bytes) -> Path:
    """`base` with one file added (what a one-layer change to an image looks like)."""
    shutil.copy(base, out)
    with tarfile.open(out, "a", format=tarfile.PAX_FORMAT) as tar:
        ti = tarfile.TarInfo(path)
        ti.size, ti.mode, ti.mtime = len(data), 0o644, 1_700_000_000
        tar.addfile(ti, io.BytesIO(data))
    return out


def _ok(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_export_lands_on_the_server_verified_and_exact(remote: Remote, fidelity_tar: Path) -> None:
    out = _ok(remote.export(fidelity_tar))
    vid = out["version"]
    assert out["server"] == "nfs-01" and out["switched"] and not out["noop"]
    assert remote.visible() == (f"versions/{vid}", [vid, f"{vid}.json"])
    assert not remote.lib.exists()  # the helper came in the command line: nothing installed
    base = remote.root / "img"
    assert os.stat(base).st_mode & 0o777 == 0o700
    tree = base / "versions" / vid
    manifest = Manifest.from_json((base / "versions" / f"{vid}.json").read_text())
    # Re-read on disk independently of the helper: every entry as the manifest says.
    assert scan(str(tree)) == manifest.entries
    # Fidelity, spelled out for what rsync must carry (numeric owners, modes, caps, links...).
    st = os.lstat(tree / "home-owned")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 4321, 0o640)
    assert os.lstat(tree / "usr/bin/both").st_mode & 0o7777 == 0o6755
    assert os.lstat(tree / "usr/bin/suid").st_mode & 0o7777 == 0o4755
    assert os.getxattr(tree / "bin/ping", "security.capability")[:4] == b"\x01\x00\x00\x02"
    assert os.getxattr(tree / "etc/tagged.conf", "user.netroot") == b"hello"
    linked = {
        os.lstat(tree / p).st_ino for p in ("usr/bin/linked", "usr/bin/linked2", "bin/linked3")
    }
    assert len(linked) == 1
    null = os.lstat(tree / "dev/null")
    assert (os.major(null.st_rdev), os.minor(null.st_rdev)) == (1, 3)
    assert os.readlink(tree / "usr/bin/env") == "/bin/busybox"
    sparse = os.lstat(tree / "opt/sparse-ish")
    assert sparse.st_size == 200_000 and sparse.st_blocks * 512 < sparse.st_size  # holes
    # The same source again: a no-op that sends nothing.
    again = _ok(remote.export(fidelity_tar))
    assert again["noop"] and again["version"] == vid and again["bytes_sent"] == 0
    # `netroot verify` re-hashes it on the server: ok, then a file changed in place is named.
    checked = remote.run("verify", "img", "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["ok"], checked.stderr
    secret = tree / "root" / "secret"
    st = secret.stat()
    secret.write_bytes(b"ROOT ONLY\n")  # same size and times: only the content hash differs
    os.utime(secret, ns=(st.st_atime_ns, st.st_mtime_ns))
    tampered = remote.run("verify", f"img@{vid}")
    assert tampered.returncode == 3 and "root/secret" in tampered.stdout, tampered.stderr
    missing = remote.run("verify", "img@" + "0" * 16)
    assert missing.returncode == 2 and "no version" in missing.stderr.splitlines()[0]
    # `versions` lists the server's (tests/integration/test_fleet_remote.py: prune, --keep).
    listing = remote.run("versions", "img", "--json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout)["current"] == vid


def test_one_change_sends_only_the_change(remote: Remote, tmp_path: Path) -> None:
    base = tmp_path / "bulk.tar"
    write_bulk_rootfs(base, 24 << 20, 400, seed=0)
    first = _ok(remote.export(base))
    changed = _changed(base, tmp_path / "bulk2.tar", "etc/new-layer", os.urandom(64 << 10))
    second = _ok(remote.export(changed))
    assert second["version"] != first["version"] and second["switched"]
    size = second["bytes"]
    # Everything but the new 64 KiB file was linked on the server: the wire carries the file
    # list and the change, a few percent of the version at most.
    assert second["bytes_sent"] < 0.05 * size, (second["bytes_sent"], size)
    assert first["bytes_sent"] > 0.9 * size
    vdir = remote.root / "img" / "versions"
    old = os.lstat(vdir / first["version"] / "data0" / "d0000" / "f000000")
    new = os.lstat(vdir / second["version"] / "data0" / "d0000" / "f000000")
    assert old.st_ino == new.st_ino  # an unchanged file is a hard link on the server


def test_kill9_mid_transfer_leaves_nothing_and_rerun_completes(
    remote: Remote, fidelity_tar: Path, tmp_path: Path
) -> None:
    vid = _ok(remote.export(fidelity_tar))["version"]
    before = remote.visible()
    bulk = tmp_path / "big.tar"
    write_bulk_rootfs(bulk, 400 << 20, 2000, seed=0)
    staging = remote.root / "img" / ".staging"
    proc = subprocess.Popen(
        remote.argv("export", str(bulk), "--name", "img"),
        env=remote.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    killed = False
    try:
        deadline = time.monotonic() + 300
        # Wait until rsync has written files into the server's staging dir, then kill -9.
        while proc.poll() is None and time.monotonic() < deadline:
            staged = sum(len(f) for _, _, f in os.walk(staging)) if staging.is_dir() else 0
            if staged > 200:
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert killed, "the export finished before the transfer could be interrupted"
    time.sleep(1)  # the children died with it (PDEATHSIG); nothing may appear afterwards
    assert remote.visible() == before == (f"versions/{vid}", [vid, f"{vid}.json"])
    again = _ok(remote.export(bulk))
    assert remote.visible()[0] == f"versions/{again['version']}"
    # Resumed: the staged part was not sent again.
    assert again["bytes_sent"] < again["bytes"]
    assert sorted(os.listdir(staging)) == []
    tree = remote.root / "img" / "versions" / again["version"]
    manifest = Manifest.from_json((tree.parent / f"{again['version']}.json").read_text())
    assert scan(str(tree)) == manifest.entries
    assert remote.run("verify", "img").returncode == 0


def test_hostile_archive_writes_nothing_outside(remote: Remote, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    bad = tmp_path / "hostile.tar"
    with tarfile.open(bad, "w") as tar:
        link = tarfile.TarInfo("escape")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(link)
        ti = tarfile.TarInfo("escape/pwned")
        ti.size = 3
        tar.addfile(ti, io.BytesIO(b"bad"))
    done = remote.export(bad)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2 and "Traceback" not in done.stderr
    assert os.listdir(outside) == []
    assert remote.visible() == (None, [])
    # A symlink out is kept as a symlink (a root filesystem has absolute links): never followed.
    ok = tmp_path / "links.tar"
    with tarfile.open(ok, "w") as tar:
        link = tarfile.TarInfo("out")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(link)
        ti = tarfile.TarInfo("etc/os-release")
        ti.size = 3
        tar.addfile(ti, io.BytesIO(b"x=1"))
    out = _ok(remote.export(ok))
    tree = remote.root / "img" / "versions" / out["version"]
    assert os.readlink(tree / "out") == str(outside) and os.listdir(outside) == []


@pytest.mark.parametrize(
    ("server_vars", "code", "words"),
    [
        ({"netroot_known_hosts": "/dev/null"}, 4, "host key is known for"),
        ({"ansible_user": "nobody-here"}, 2, "needs root on the server"),
        ({"netroot_export_remote": "yes"}, 2, "netroot_export_remote"),
    ],
)
def test_bad_inputs_one_line(
    host: NetnsHost,
    tmp_path: Path,
    fidelity_tar: Path,
    server_vars: dict[str, Any],
    code: int,
    words: str,
) -> None:
    remote = _remote(host, tmp_path / "bad", **server_vars)
    done = remote.export(fidelity_tar)
    assert done.returncode == code, done.stderr
    assert words in done.stderr.splitlines()[0]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2
    assert not (remote.root / "img" / "versions").exists() or remote.visible()[1] == []


@pytest.fixture
def sudo_user(host: NetnsHost) -> Iterator[tuple[str, Path]]:
    """A login user with passwordless sudo on the (shared) machine, removed afterwards."""
    if shutil.which("sudo") is None or shutil.which("useradd") is None:
        pytest.skip("sudo or useradd is not installed")
    user = f"nrx{os.urandom(3).hex()}"
    sudoers = Path(f"/etc/sudoers.d/{user}")
    # sshd reads the shared authorized_keys file as that user: let it through the test's
    # private directories for as long as the user exists.
    keys = host.workdir / "authorized_keys"
    opened = [keys, *[d for d in keys.parents if d != Path("/")]]
    modes = {path: path.stat().st_mode & 0o7777 for path in opened}
    subprocess.run(["useradd", "-M", "-d", "/nonexistent", "-s", "/bin/sh", user], check=True)
    try:
        keys.chmod(modes[keys] | 0o004)
        for directory in opened[1:]:
            directory.chmod(modes[directory] | 0o001)
        # '*' instead of useradd's '!': sshd (UsePAM no) refuses a locked account's key login.
        subprocess.run(["usermod", "-p", "*", user], check=True)
        sudoers.write_text(f"{user} ALL=(ALL) NOPASSWD: ALL\n")
        sudoers.chmod(0o440)
        yield user, sudoers
    finally:
        sudoers.unlink(missing_ok=True)
        subprocess.run(["userdel", user], check=False, capture_output=True)
        for path, mode in modes.items():
            path.chmod(mode)


def test_become_through_sudo(
    host: NetnsHost, tmp_path: Path, fidelity_tar: Path, sudo_user: tuple[str, Path]
) -> None:
    user, sudoers = sudo_user
    remote = _remote(host, tmp_path / "become", ansible_user=user, ansible_become=True)
    out = _ok(remote.export(fidelity_tar))
    tree = remote.root / "img" / "versions" / out["version"]
    st = os.lstat(tree / "home-owned")
    assert (st.st_uid, st.st_gid) == (1234, 4321)  # root on the server wrote it, not the user
    assert os.lstat(remote.root / "img").st_uid == 0
    # Without passwordless sudo: one line saying so, never a prompt, nothing visible.
    sudoers.unlink()
    other = _remote(host, tmp_path / "nopw", ansible_user=user, ansible_become=True)
    done = other.export(fidelity_tar)
    assert done.returncode == 2, done.stderr
    assert "password" in done.stderr.splitlines()[0] and "Traceback" not in done.stderr
    assert not (other.root / "img").exists()


def test_full_disk_on_the_server_leaves_nothing(tmp_path: Path, fidelity_tar: Path) -> None:
    root = tmp_path / "full" / "server-root"
    root.mkdir(parents=True)
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=24m", "netroot-enospc", str(root)],
            check=True,
            capture_output=True,
        )
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot mount a small tmpfs here: {exc.stderr}")
    try:
        # A host of its own, started after the mount: its sshd's mount namespace has it.
        (tmp_path / "h").mkdir()
        with netns_host(tmp_path / "h") as host:
            _full_disk(_remote(host, tmp_path / "full"), fidelity_tar, tmp_path)
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)


def _full_disk(remote: Remote, fidelity_tar: Path, tmp_path: Path) -> None:
    vid = _ok(remote.export(fidelity_tar))["version"]
    bulk = tmp_path / "bulk.tar"
    write_bulk_rootfs(bulk, 40 << 20, 200, seed=0)
    done = remote.export(bulk)
    assert done.returncode == 5, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "no space left" in lines[0] and len(lines) == 2 and "Traceback" not in done.stderr
    assert remote.visible() == (f"versions/{vid}", [vid, f"{vid}.json"])
    assert os.listdir(remote.root / "img" / ".staging") == []  # the space is given back
    # The disk still full: --keep (the fleet state read on the server) changes nothing.
    keep = remote.export(bulk, "--keep", "1")
    assert keep.returncode == 5 and "Traceback" not in keep.stderr, keep.stderr
    assert remote.visible() == (f"versions/{vid}", [vid, f"{vid}.json"])


def test_transfer_reports_progress(remote: Remote, tmp_path: Path) -> None:
    from netroot.export import sources
    from netroot.export.request import ExportOptions, Source
    from netroot.export.serverroot import ServerRoot
    from netroot.inventory import load

    bulk = tmp_path / "p.tar"
    write_bulk_rootfs(bulk, 16 << 20, 100, seed=0)
    info = sources.inspect_archive(bulk)
    seen: list[tuple[int, int]] = []
    root = ServerRoot(load(remote.inventory).server, mirror=tmp_path / "mirror")
    done = root.export(
        Source(info, lambda w: sources.apply_archive(info, w)),
        "img",
        ExportOptions(progress=lambda b, f: seen.append((b, f))),
    )
    assert done.bytes_sent is not None and done.bytes_sent > 16 << 20 and done.result.switched
    # rsync's progress lines (its files counted from the first, xfr#1) up to the whole tree.
    assert (1 in {f for _, f in seen}) and seen[-1][0] >= done.result.manifest.bytes


def test_second_writer_on_the_server_is_refused(remote: Remote, fidelity_tar: Path) -> None:
    from netroot.export.serverroot import Session, remote_target
    from netroot.inventory import load

    server = load(remote.inventory).server
    target = remote_target(server)
    # Another control host's export of the same name, holding the lock on the server.
    other = Session(target, str(remote.root), "img", "0" * 16)
    try:
        done = remote.export(fidelity_tar)
        assert done.returncode == 6, done.stderr
        assert "another export or prune of 'img'" in done.stderr.splitlines()[0]
        assert remote.visible() == (None, [])
    finally:
        other.close()  # its ssh closes: the lock dies with the helper
    assert _ok(remote.export(fidelity_tar))["switched"]


def test_docker_image_one_layer_change(remote: Remote, docker_client: Any, tmp_path: Path) -> None:
    """Images in the local engine: the second differs from the first in its top layer only."""
    from tests.integration.export import dockerkit

    one, two = "netroot-test/export-remote:1", "netroot-test/export-remote:2"
    dockerkit.build_bulk(tmp_path / "a", one, 32 << 20, b"v1\n")
    dockerkit.build_bulk(tmp_path / "a", two, 32 << 20, b"v2\n")  # same lower layers
    first = _ok(remote.export(Path(one)))
    second = _ok(remote.export(Path(two)))
    assert second["version"] != first["version"]
    assert second["bytes_sent"] < 0.05 * second["bytes"], (second["bytes_sent"], second["bytes"])
    tree = remote.root / "img" / "versions" / second["version"]
    assert (tree / "app" / "version").read_bytes() == b"v2\n"
    assert remote.run("verify", "img").returncode == 0


def test_directory_times_exact_when_sent_in_their_own_second(
    remote: Remote, tmp_path: Path
) -> None:
    """A directory whose mtime is the very second rsync creates it on the server keeps it.

    rsync compares times in whole seconds unless told otherwise: a directory it created in the
    second of its source mtime looked "unchanged" and kept its creation time, nanoseconds
    included (docker's init layer /proc and /sys, created a second before a fast re-export,
    failed verification that way). Empty directories stamped with each of the coming seconds
    make that clash certain, whatever this machine's speed."""
    start = time.time_ns() // 10**9
    archive = tmp_path / "clock.tar"
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(120):
            ti = tarfile.TarInfo(f"s{i:03}")
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, start + i
            tar.addfile(ti)
        ti = tarfile.TarInfo("etc/hostname")
        ti.size, ti.mtime = 3, start
        tar.addfile(ti, io.BytesIO(b"b1\n"))
    vid = _ok(remote.export(archive))["version"]
    base = remote.root / "img" / "versions"
    tree = base / vid
    manifest = Manifest.from_json((base / f"{vid}.json").read_text())
    assert scan(str(tree)) == manifest.entries
    stamps = [os.lstat(tree / f"s{i:03}") for i in range(120)]
    assert [st.st_mtime_ns for st in stamps] == [(start + i) * 10**9 for i in range(120)]
    # The clash happened: a directory rsync created (ctime) in the second of its own mtime.
    assert any(st.st_ctime_ns // 10**9 == st.st_mtime_ns // 10**9 for st in stamps)


def test_flipped_byte_on_the_server_verify_repair_verify(
    remote: Remote, fidelity_tar: Path
) -> None:
    """The way back on a remote export root: verify there (exit 3) names the command, the
    command repairs the server's copy in place (only the damaged paths cross), verify passes."""
    import shlex

    from tests.unit.export.test_export_repair import flip

    vid = _ok(remote.export(fidelity_tar))["version"]
    damaged = remote.root / "img" / "versions" / vid / "opt" / "random.bin"
    inode = os.lstat(damaged).st_ino
    flip(damaged, 4096)
    bad = remote.run("verify", "img")
    assert bad.returncode == 3, bad.stderr
    hint = bad.stderr.strip().splitlines()[-1]
    command = shlex.split(hint[hint.index("netroot export") :])
    assert command[2:] == [str(fidelity_tar), "--name", "img", "--repair"]
    fixed = remote.run("export", *command[2:], "--json")
    done = _ok(fixed)
    assert done["repaired"] == ["rewrote /opt/random.bin in place"], done
    assert remote.run("verify", "img").returncode == 0
    assert os.lstat(damaged).st_ino == inode
    assert remote.visible()[0] == f"versions/{vid}"


def test_one_image_one_tree_hash_here_and_on_the_server(
    remote: Remote, docker_client: Any, tmp_path: Path
) -> None:
    """The same image exported to this host and, a moment later, to the server: one tree hash,
    and the server's copy re-hashed from its disk holds it."""
    from tests.integration.export import dockerkit

    image = "netroot-test/export-remote:1"
    dockerkit.build_bulk(tmp_path / "a", image, 8 << 20, b"v1\n")
    here = subprocess.run(
        [sys.executable, "-m", "netroot", "export", image, "--name", "img", "--json",
         "--root", str(tmp_path / "here")],
        capture_output=True, text=True, env=remote.env(), timeout=600,
    )  # fmt: skip
    local = _ok(here)
    time.sleep(1.05 - time.time() % 1)  # another second: another container
    there = _ok(remote.export(Path(image)))
    assert there["version"] == local["version"]
    assert there["tree_hash"] == local["tree_hash"]
    tree = remote.root / "img" / "versions" / there["version"]
    from netroot.export.manifest import tree_hash

    assert tree_hash(scan(str(tree))) == local["tree_hash"]
    verified = remote.run("verify", "img", "--json")
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout)["tree_hash"] == local["tree_hash"]


def test_prune_dry_run_writes_nothing_on_the_server_and_says_why(
    remote: Remote, fidelity_tar: Path, tmp_path: Path
) -> None:
    from tests.unit.export.test_export_prune import snapshot

    made = [
        _ok(remote.export(_changed(fidelity_tar, tmp_path / f"v{i}.tar", f"v{i}", b"%d" % i)))
        for i in range(3)
    ]
    ids = [m["version"] for m in made]
    before = snapshot(remote.root)
    plan = remote.run("prune", "img", "--keep", "1", "--dry-run", "--json")
    assert plan.returncode == 0, plan.stderr
    out = json.loads(plan.stdout)
    assert out["dry_run"] is True and out["removed"] == ids[:2]
    assert out["kept"] == {ids[2]: ["current", "among the 1 newest"]}
    assert snapshot(remote.root) == before
    done = remote.run("prune", "img", "--keep", "1", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["removed"] == ids[:2]
    assert remote.visible() == (f"versions/{ids[2]}", sorted([ids[2], f"{ids[2]}.json"]))
