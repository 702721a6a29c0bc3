"""A diskless board in the virtual lab (issue 14's Show), in order on one board:

it boots its assigned version (U-Boot asks the lab server's dnsmasq, PXE-boots the version's
kernel and initramfs from its TFTP directory, root on NFS with a tmpfs overlay) and smokes
green; a rollout moves it to a new version by a reboot; a rollback moves it back.

The module adds one diskless board (nb-01) to the session's lab and removes it again at the end,
so the other modules' lab is as they expect. The first rollout finds nb-01 powered off and
powers it on through the inventory's netroot_power_cycle_cmd, as a lab with a switched PDU.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LAB_BOARDS, LabHandle
from tests.e2e.helpers import BASE_IMAGE, export, netroot, variant_image

pytestmark = pytest.mark.e2e

BOARD = "nb-01"
IMAGE = "netroot-lab/raspbian-netboot:bookworm"
NAME = "raspbian-netboot"
FAST = ("--qpu", "skip", "--yes")


def _report(msg: str) -> None:
    print(f"[lab] {msg}", flush=True)


@pytest.fixture(scope="module")
def inv(lab: LabHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The lab with one diskless board more, and a copy of its inventory."""
    from netroot.lab.host import service

    boards = max(LAB_BOARDS, len(lab.boards))
    export(lab.inventory, BASE_IMAGE)  # the SD boards' image: the server exports it too
    service.up(boards, _report, netboot=1)
    path = tmp_path_factory.mktemp("netboot") / "inventory.yml"
    shutil.copy(lab.inventory, path)
    yield path
    service.up(boards, _report, netboot=0)  # nb-01 powered off, out of the inventory


def _rollout(inv: Path, image: str) -> tuple[int, dict[str, Any]]:
    proc = netroot(inv, "rollout", image, "--name", NAME, "--group", "lab_netboot", "--json",
                   "--canary", "0", "--batch", "100%", *FAST)  # fmt: skip
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def _booted(inv: Path) -> dict[str, Any]:
    proc = netroot(inv, "status", BOARD, "--json")
    boards: dict[str, dict[str, Any]] = {b["board"]: b for b in json.loads(proc.stdout)["boards"]}
    return boards[BOARD]


def _ssh(lab: LabHandle, inv: Path, command: str) -> str:
    from netroot.inventory import load
    from netroot.lab.host.ready import ssh_argv

    address = load(inv).boards[BOARD].address
    argv = ssh_argv(address, lab.key, lab.known_hosts, command, user="pi")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_diskless_board_boots_its_version_and_smokes_green(lab: LabHandle, inv: Path) -> None:
    proc = netroot(inv, "export", IMAGE, "--name", NAME)  # a version of its image exists
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = netroot(inv, "provision", BOARD)  # powers it on (netroot_power_cycle_cmd) if off
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    status = _booted(inv)
    version = status["mounted"]
    assert version and not status["drift"], status
    # No disk at all: the root is an overlay over the version on NFS, read-only.
    assert _ssh(lab, inv, "ls /sys/block | grep -v -e '^loop' -e '^ram' || true") == ""
    assert _ssh(lab, inv, "findmnt -n -o FSTYPE /") == "overlay"
    version_mount = _ssh(lab, inv, "findmnt -n -o FSTYPE,OPTIONS /run/netroot/version").split()
    assert version_mount[0] == "nfs" and "ro" in version_mount[1].split(","), version_mount
    # the root is the immutable version: no close-to-open, attributes cached (cmdline.txt.j2)
    assert {"nocto", "acregmin=86400"} <= set(version_mount[1].split(",")), version_mount
    assert f"/versions/{version}" in _ssh(lab, inv, "cat /proc/cmdline")
    proc = netroot(inv, "smoke", BOARD, "--qpu", "skip", "--json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_rollout_moves_it_by_a_reboot_and_rollback_moves_it_back(lab: LabHandle, inv: Path) -> None:
    before = _booted(inv)["mounted"]
    # What the board's root holds now (a lab that ran this test before, and was stopped in the
    # middle of it, may have left nb-01 assigned a variant that carries a stamp).
    stamp = "cat /etc/netroot-stamp 2>/dev/null || echo none"
    stamped = _ssh(lab, inv, stamp)
    boot_id = _ssh(lab, inv, "cat /proc/sys/kernel/random/boot_id")
    rc, result = _rollout(inv, variant_image("e2e-nb-b", "b", base=IMAGE))
    assert rc == 0, result
    after = result["boards"][0]["version"]
    assert after != before and result["boards"][0]["outcome"] == "ok"
    assert _booted(inv)["mounted"] == after
    assert _ssh(lab, inv, "cat /etc/netroot-stamp") == "b"
    assert _ssh(lab, inv, "cat /proc/sys/kernel/random/boot_id") != boot_id  # it rebooted
    proc = netroot(inv, "rollback", BOARD, "--yes", "--json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _booted(inv)["mounted"] == before
    assert _ssh(lab, inv, stamp) == stamped  # the root it had before, not the variant's
