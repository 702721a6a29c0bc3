"""netroot's built-in smoke checks. `host` runs commands inside the board's chroot.

Run by `netroot smoke`, or by hand with testinfra's own options:
`pytest -p netroot.smoke.plugin --hosts=netroot://pi-01 --ansible-inventory=INV <this file>`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from netroot.smoke.plugin import BoardShell

MOUNTED = "/run/netroot/mounted"
ASSIGNED = "/etc/netroot/assigned"


def _read(board: BoardShell, path: str) -> str:
    res = board.run(f"cat {path}")
    assert res.rc == 0, f"{path} missing on the board: {res.stderr.decode().strip()}"
    return res.stdout.decode().strip()


def test_assigned_version_mounted(host: Any, board: BoardShell, expected: dict[str, Any]) -> None:
    mounted = _read(board, MOUNTED).split()
    assert mounted, f"{MOUNTED} is empty: netroot-mount did not finish"
    want = expected.get("version") or _read(board, ASSIGNED).split()[0]
    assert mounted[0] == want, f"mounted version {mounted[0]}, assigned {want}"
    if expected.get("tree_hash") and len(mounted) > 1:
        assert mounted[1] == expected["tree_hash"], "mounted tree hash differs from manifest"
    mounts = board.run("cat /proc/mounts").stdout.decode()
    assert re.search(rf"/versions/{re.escape(want)}\S*\s", mounts), (
        f"no NFS mount of versions/{want} on the board"
    )


def test_shared_root_read_only(host: Any, board: BoardShell) -> None:
    res = board.run("cat /run/netroot/shared")
    shared = res.stdout.decode().strip()
    assert res.rc == 0 and shared, "/run/netroot/shared (the shared version's mountpoint) missing"
    opts = [
        ln.split()[3]
        for ln in board.run("cat /proc/mounts").stdout.decode().splitlines()
        if len(ln.split()) > 3 and ln.split()[1] == shared
    ]
    assert opts, f"{shared} is not a mountpoint"
    assert "ro" in opts[-1].split(","), f"shared version mounted {opts[-1]}, expected ro"
    probe = board.run(f"touch {shared}/.netroot-probe")
    assert probe.rc != 0, f"could write into the shared version at {shared}"


def test_writable_layer_is_the_boards(host: Any, board: BoardShell) -> None:
    name = host.backend.get_hostname()
    probe = f"/var/tmp/.netroot-probe-{name}"
    assert host.run(f"echo {name} > {probe}").rc == 0, "the chroot's root is not writable"
    shared = board.run("cat /run/netroot/shared").stdout.decode().strip()
    leaked = board.run(f"test -e {shared}{probe}")
    host.run(f"rm -f {probe}")
    assert leaked.rc != 0, "a write in the chroot reached the shared version"


@pytest.mark.parametrize(
    "path,kind", [("/dev/null", "c"), ("/proc/self/stat", "f"), ("/sys/kernel", "d")]
)
def test_pseudo_filesystems(host: Any, path: str, kind: str) -> None:
    assert host.run(f"test -{kind} {path}").rc == 0, f"{path} missing in the chroot"


def test_armhf_userspace(host: Any) -> None:
    arch = host.check_output("/usr/bin/dpkg --print-architecture")
    assert arch == "armhf", f"dpkg architecture {arch}, expected armhf"
    bits = host.check_output("/usr/bin/python3 -c 'import struct; print(struct.calcsize(\"P\")*8)'")
    assert bits == "32", f"{bits}-bit userspace, expected 32"


def test_python3_runs(host: Any) -> None:
    out = host.check_output("/usr/bin/python3 -c 'import json, sys; print(sys.version_info[0])'")
    assert out == "3"


def test_identity_is_the_boards(host: Any, board: BoardShell) -> None:
    name = host.backend.get_hostname()
    assert host.check_output("/bin/cat /etc/hostname") == name
    inside = host.check_output("/bin/cat /etc/machine-id")
    assert re.fullmatch(r"[0-9a-f]{32}", inside), f"machine-id {inside!r} in the chroot"
    assert inside == _read(board, "/etc/machine-id"), "chroot machine-id is not the board's"


def test_resolver(host: Any, board: BoardShell) -> None:
    inside = host.run("/bin/cat /etc/resolv.conf").stdout
    assert inside == board.run("cat /etc/resolv.conf").stdout, "resolv.conf is not the board's"
    code = "import socket; print(socket.getaddrinfo('localhost', 22)[0][4][0])"
    assert host.run(f'/usr/bin/python3 -c "{code}"').rc == 0, "name resolution fails"


def test_torch_imports(host: Any) -> None:
    res = host.run("/usr/bin/python3 -c 'import torch; print(torch.__version__)'")
    if "ModuleNotFoundError" in res.stderr:
        pytest.skip("skipped: no torch in image")
    assert res.rc == 0, res.stderr.strip().splitlines()[-1:]
