"""netroot's built-in smoke checks. `host` runs commands inside the board's chroot (sd), or on
a netboot board's booted root (its root is the version; `board` is then the same root).

Run by `netroot smoke`, or by hand with testinfra's own options:
`pytest -p netroot.smoke.plugin --hosts=netroot://pi-01 --ansible-inventory=INV <this file>`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from netroot.smoke.checks.bootchecks import for_host
from netroot.smoke.facts import BoardShell


def test_assigned_version_mounted(host: Any, board: BoardShell, expected: dict[str, Any]) -> None:
    for_host(host).version_mounted(host, board, expected)


def test_shared_root_read_only(host: Any, board: BoardShell) -> None:
    for_host(host).shared_root_read_only(host, board)


def test_writable_layer_is_the_boards(host: Any, board: BoardShell) -> None:
    for_host(host).writable_layer(host, board, host.backend.get_hostname())


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
    for_host(host).machine_id(board, inside)


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
