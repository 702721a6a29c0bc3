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
from netroot.smoke.shell import BoardShell, version_facts
from netroot.smoke.versionfacts import PSEUDO


def test_assigned_version_mounted(host: Any, board: BoardShell, expected: dict[str, Any]) -> None:
    for_host(host).version_mounted(version_facts(host), board, expected)


def test_shared_root_read_only(host: Any, board: BoardShell) -> None:
    for_host(host).shared_root_read_only(board)


def test_writable_layer_is_the_boards(host: Any, board: BoardShell) -> None:
    for_host(host).writable_layer(version_facts(host), board, host.backend.get_hostname())


@pytest.mark.parametrize("path,probe,kind", PSEUDO, ids=[p for p, _, _ in PSEUDO])
def test_pseudo_filesystems(host: Any, path: str, probe: str, kind: str) -> None:
    inside = version_facts(host).facts
    assert inside.rc(f"present:{path}") == 0, f"{probe} missing in the chroot"
    assert path in inside.devices, f"stat {path} in the chroot failed"
    if not hasattr(host.backend, "run_on_board"):
        return  # another testinfra backend: no board outside to compare with
    # Bound from the board (same filesystem as the board's own), not the image's static nodes:
    # container images ship a /dev with null, zero, ... that hides a missing bind.
    outside = BoardShell(host.backend).facts.devices.get(path, "")
    hint = "run netroot-mount on the board"
    assert inside.devices[path] == outside, (
        f"{path} in the chroot is not the board's {path} (not bound); {hint}"
    )


def test_armhf_userspace(host: Any) -> None:
    version = version_facts(host)
    out = version.facts.outputs.get("arch", "").strip()
    rc = version.facts.rc("arch")
    assert rc == 0, f"dpkg --print-architecture in the version: rc {rc} {out}"
    bits = version.python_facts()["bits"]
    if out == "arm64" and bits == 64:  # it runs, so the board's kernel is aarch64
        pytest.skip("arm64 userspace (64-bit Raspberry Pi OS, where torch is)")
    if out == "amd64" and bits == 64:  # it runs, so the board's kernel is x86_64: not a Pi
        pytest.skip("amd64 userspace: a light board of the lab (docs/lab.md), for scale only")
    assert out == "armhf", f"dpkg architecture {out}, expected armhf"
    assert bits == 32, f"{bits}-bit userspace, expected 32"


def test_python3_runs(host: Any) -> None:
    assert version_facts(host).python_facts()["major"] == 3


def test_identity_is_the_boards(host: Any, board: BoardShell) -> None:
    name = host.backend.get_hostname()
    files = version_facts(host).facts.files
    words = files.get("/etc/hostname", "").split() + files.get("/etc/machine-id", "").split()
    assert len(words) == 2, f"/etc/hostname and /etc/machine-id in the chroot: {words}"
    assert words[0] == name, f"hostname {words[0]!r} in the chroot, expected {name!r}"
    inside = words[1]
    assert re.fullmatch(r"[0-9a-f]{32}", inside), f"machine-id {inside!r} in the chroot"
    for_host(host).machine_id(board, inside)


def test_resolver(host: Any, board: BoardShell) -> None:
    version = version_facts(host)
    inside = version.facts.files.get("/etc/resolv.conf", "")
    outside = board.facts.files.get("/etc/resolv.conf")
    assert inside == outside, "resolv.conf is not the board's"
    python = version.python_facts()
    assert "resolved" in python, f"name resolution fails: {python.get('resolve_error')}"


def test_torch_imports(host: Any) -> None:
    torch = version_facts(host).python_facts().get("torch")
    if torch is None or "ModuleNotFoundError" in torch["stderr"]:
        pytest.skip("skipped: no torch in image")
    assert torch["rc"] == 0, torch["stderr"].strip().splitlines()[-1:] or f"rc {torch['rc']}"
