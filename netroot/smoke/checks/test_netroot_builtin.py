"""netroot's built-in smoke checks. `host` runs commands inside the board's chroot (sd), or on
a netboot board's booted root (its root is the version; `board` is then the same root).

Run by `netroot smoke`, or by hand with testinfra's own options:
`pytest -p netroot.smoke.plugin --hosts=netroot://pi-01 --ansible-inventory=INV <this file>`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from netroot.smoke.facts import ASSIGNED, MOUNTED
from netroot.smoke.plugin import BoardShell

SHARED = "/run/netroot/shared"  # on the board: the image's export, mounted read-only
MANIFEST = "/run/netroot/manifest.json"  # in the chroot: the mounted version's manifest
READ_MANIFEST = (
    "/usr/bin/python3 -c \"import json; d = json.load(open('" + MANIFEST + "')); "
    "print(d['version'], d['tree_hash'])\""
)


def _netboot(host: Any) -> bool:
    board = getattr(host.backend, "board", None)
    return bool(getattr(board, "netboot", False))


def test_assigned_version_mounted(host: Any, board: BoardShell, expected: dict[str, Any]) -> None:
    if _netboot(host):
        from netroot.netboot.cmdline import booted_version

        booted = booted_version(board.facts.read("/proc/cmdline"))
        assert booted, "/proc/cmdline names no netroot version (nfsroot=.../versions/ID)"
        if expected.get("version"):
            want = expected["version"]
            assert booted == want, f"booted version {booted}, should run {want}"
        return
    facts = board.facts
    mounted = facts.read(MOUNTED)
    assert mounted, f"{MOUNTED} is empty: netroot-mount did not finish"
    want = expected.get("version") or facts.read(ASSIGNED)
    assert mounted == want, f"mounted version {mounted}, should run {want}"
    version, tree_hash = host.check_output(READ_MANIFEST).split()
    assert version == want, f"the chroot's manifest is version {version}, should be {want}"
    if expected.get("tree_hash"):
        assert tree_hash == expected["tree_hash"], "the chroot's tree hash differs from the export"
    opts = facts.mount_options("/run/netroot/root") or ""
    assert f"{SHARED}/versions/{want}" in opts, f"chroot root is not over versions/{want}: {opts}"


def test_shared_root_read_only(host: Any, board: BoardShell) -> None:
    if _netboot(host):
        nfs = [m for m in board.facts.mounts if len(m) > 3 and m[2].startswith("nfs")
               and "/versions/" in m[0]]  # fmt: skip
        assert nfs, "no NFS mount of a version (the netbooted root)"
        assert all("ro" in m[3].split(",") for m in nfs), f"the version is mounted rw: {nfs}"
        return
    opts = board.facts.mount_options(SHARED)
    assert opts is not None, f"{SHARED} (the image's export) is not mounted"
    assert "ro" in opts.split(","), f"the shared export is mounted {opts}, expected ro"
    probe = board.run(f"touch {SHARED}/.netroot-probe")
    assert probe.rc != 0, f"could write into the shared export at {SHARED}"


def test_writable_layer_is_the_boards(host: Any, board: BoardShell) -> None:
    name = host.backend.get_hostname()
    if _netboot(host):
        # cmdline.txt asks for netroot.overlay=tmpfs: / is an overlay, its writes in RAM.
        root = [m for m in board.facts.mounts if len(m) > 2 and m[1] == "/"]
        assert root and root[-1][2] == "overlay", f"/ is not an overlay: {root[-1:] or 'none'}"
        probe = f"/var/tmp/.netroot-probe-{name}"
        assert host.run(f"echo {name} > {probe}").rc == 0, "the booted root is not writable"
        host.run(f"rm -f {probe}")
        return
    version = board.facts.read(MOUNTED)
    probe = f"/var/tmp/.netroot-probe-{name}"
    assert host.run(f"echo {name} > {probe}").rc == 0, "the chroot's root is not writable"
    leaked = board.run(f"test -e {SHARED}/versions/{version}{probe}")
    host.run(f"rm -f {probe}")
    assert leaked.rc != 0, "a write in the chroot reached the shared version"


@pytest.mark.parametrize(
    "path,probe,kind",
    [("/dev", "/dev/null", "c"), ("/proc", "/proc/self/stat", "f"), ("/sys", "/sys/kernel", "d")],
    ids=["/dev", "/proc", "/sys"],
)
def test_pseudo_filesystems(host: Any, path: str, probe: str, kind: str) -> None:
    # One command: the probe, then the device number of `path` (3: the probe is missing).
    res = host.run(f"if test -{kind} {probe}; then stat -c %d {path}; else exit 3; fi")
    assert res.rc != 3, f"{probe} missing in the chroot"
    assert res.rc == 0, f"stat {path} in the chroot: rc {res.rc} {res.stderr.strip()}"
    if not hasattr(host.backend, "run_on_board"):
        return  # another testinfra backend: no board outside to compare with
    # Bound from the board (same filesystem as the board's own), not the image's static nodes:
    # container images ship a /dev with null, zero, ... that hides a missing bind.
    inside = res.stdout.strip()
    outside = BoardShell(host.backend).facts.devices.get(path, "")
    hint = "run netroot-mount on the board"
    assert inside == outside, f"{path} in the chroot is not the board's {path} (not bound); {hint}"


def test_armhf_userspace(host: Any) -> None:
    python_bits = "/usr/bin/python3 -c 'import struct; print(struct.calcsize(\"P\")*8)'"
    out = host.check_output(f"/usr/bin/dpkg --print-architecture && {python_bits}")
    arch, _, bits = out.partition("\n")
    if arch == "arm64" and bits.strip() == "64":  # it runs, so the board's kernel is aarch64
        pytest.skip("arm64 userspace (64-bit Raspberry Pi OS, where torch is)")
    assert arch == "armhf", f"dpkg architecture {arch}, expected armhf"
    assert bits.strip() == "32", f"{bits.strip()}-bit userspace, expected 32"


def test_python3_runs(host: Any) -> None:
    out = host.check_output("/usr/bin/python3 -c 'import json, sys; print(sys.version_info[0])'")
    assert out == "3"


def test_identity_is_the_boards(host: Any, board: BoardShell) -> None:
    name = host.backend.get_hostname()
    # Both files in one command; an echo between them, in case the first ends without a newline.
    words = host.check_output("/bin/cat /etc/hostname; echo; /bin/cat /etc/machine-id").split()
    assert len(words) == 2, f"/etc/hostname and /etc/machine-id in the chroot: {words}"
    assert words[0] == name, f"hostname {words[0]!r} in the chroot, expected {name!r}"
    inside = words[1]
    assert re.fullmatch(r"[0-9a-f]{32}", inside), f"machine-id {inside!r} in the chroot"
    if _netboot(host):  # its identity comes from its cmdline.txt, not from the shared image
        words = board.facts.read("/proc/cmdline").split()
        assert f"systemd.machine_id={inside}" in words, "machine-id is not the one cmdline.txt set"
        return
    assert inside == board.facts.read("/etc/machine-id"), "chroot machine-id is not the board's"


def test_resolver(host: Any, board: BoardShell) -> None:
    inside = host.run("/bin/cat /etc/resolv.conf").stdout
    outside = board.facts.files.get("/etc/resolv.conf")
    assert inside == outside, "resolv.conf is not the board's"
    code = "import socket; print(socket.getaddrinfo('localhost', 22)[0][4][0])"
    assert host.run(f'/usr/bin/python3 -c "{code}"').rc == 0, "name resolution fails"


def test_torch_imports(host: Any) -> None:
    res = host.run("/usr/bin/python3 -c 'import torch; print(torch.__version__)'")
    if "ModuleNotFoundError" in res.stderr:
        pytest.skip("skipped: no torch in image")
    assert res.rc == 0, res.stderr.strip().splitlines()[-1:]
