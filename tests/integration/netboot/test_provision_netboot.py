"""Provision of a netboot board through the real roles, ansible-runner and dnsmasq: the server
role templates, validates and runs dnsmasq, the board play points the board's TFTP directory at
its version on the server and "reboots" it. All against a real sshd host in a network namespace
this test creates (tests/integration/provision_hosts.py).

The one thing faked is the board's boot: the sshd host plays the diskless board, its
/proc/cmdline is a file (netroot_board_cmdline_file) and its reboot command does what a Pi's
firmware does at boot: read cmdline.txt from its TFTP directory - over TFTP, from the dnsmasq the
role started. So the board boots whatever its TFTP directory pointed at when it rebooted.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot import bundle
from netroot.errors import Exit
from netroot.inventory import load
from netroot.provision.apply import ProvisionResult, provision
from netroot.templating import Renderer
from tests.integration.netboot.pxe_rom import parse_options
from tests.integration.provision_hosts import (
    NEEDS_HOSTS,
    NetnsHost,
    make_export_tree,
    netns_host,
    write_inventory,
)

pytestmark = [
    *NEEDS_HOSTS,
    pytest.mark.skipif(shutil.which("dnsmasq") is None, reason="dnsmasq not installed"),
    pytest.mark.skipif(shutil.which("ganesha.nfsd") is None, reason="nfs-ganesha not installed"),
]

ROM = Path(__file__).with_name("pxe_rom.py")
A, B = "a1" * 8, "b2" * 8
MAC, SERIAL = "b8:27:eb:12:34:56", "1a2b3c4d"
FIRMWARE = ("bootcode.bin", "start.elf", "fixup.dat", "config.txt", "kernel7.img",
            "bcm2710-rpi-3-b.dtb", "cmdline.txt")  # fmt: skip


@dataclass
class Lab:
    host: NetnsHost
    tmp: Path
    inventory: Path

    @property
    def tftp(self) -> Path:
        return self.tmp / "tftp"

    def run(self, targets: list[str], **kw: Any) -> ProvisionResult:
        self.changed_tasks: list[str] = []

        def note(event: Any, _summary: Any) -> None:
            data = event.get("event_data") or {}
            if event.get("event") == "runner_on_ok" and (data.get("res") or {}).get("changed"):
                self.changed_tasks.append(f"{data.get('host')}: {data.get('task')}")

        return provision(load(self.inventory), targets, on_event=note, **kw)

    def booted(self) -> str:
        return (self.tmp / "cmdline").read_text()

    def dnsmasq(self, command: str) -> subprocess.CompletedProcess[str]:
        return self.host.exec(str(self.tmp / "bin" / "netroot-dnsmasq"), command, check=False)

    def fetch(self, *names: str) -> dict[str, bytes]:
        """What a Pi's firmware reads over TFTP (from the test's side of the veth)."""
        out = subprocess.run([sys.executable, str(ROM), "tftp", self.host.address, *names],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        return {k: base64.b64decode(v) for k, v in json.loads(out).items()}


def _version(root: Path, version: str) -> None:
    vdir = make_export_tree(root, "raspbian", version)
    firmware = vdir / "boot" / "firmware"
    firmware.mkdir(parents=True)
    for name in FIRMWARE:
        (firmware / name).write_bytes(f"{version}:{name}:".encode() + os.urandom(700))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("netboot")
    (tmp / "netns").mkdir()
    with netns_host(tmp / "netns") as host:
        root = tmp / "export"
        _version(root, B)
        _version(root, A)  # current -> A
        (tmp / "bin").mkdir()
        # What an older netroot installed there (the tool as a tree of modules): removed.
        (tmp / "lib" / "netroot" / "remote").mkdir(parents=True)
        (tmp / "lib" / "netroot" / "remote" / "switch.py").write_text("raise SystemExit(3)\n")
        (tmp / "cmdline").write_text("root=/dev/mmcblk0p2 rootwait\n")  # never netbooted
        (tmp / "boot_id").write_text("first boot\n")
        reboot = tmp / "fake-reboot"
        # The board's firmware at boot: cmdline.txt from its TFTP directory, over TFTP.
        reboot.write_text(
            f"#!/bin/sh\nset -e\n{sys.executable} {ROM} tftp {host.address} {SERIAL}/cmdline.txt"
            f" | {sys.executable} -c 'import base64, json, sys; sys.stdout.buffer.write("
            f'base64.b64decode(json.load(sys.stdin)["{SERIAL}/cmdline.txt"]))'
            f"' > {tmp / 'cmdline'}\ndate +%s%N > {tmp / 'boot_id'}\n"
        )
        prefix = host.address.rsplit(".", 1)[0]
        data = {
            "all": {
                "vars": host.inventory_vars(),
                "children": {
                    "nfs_servers": {"hosts": {"nfs-t": {
                        "ansible_host": host.address,
                        "netroot_export_root": str(root),
                        "netroot_nfs_address": host.address,
                        # the lab's backend (this kernel has no nfsd)
                        "netroot_nfs_backend": "ganesha",
                        "netroot_nfs_server_ganesha_conf": str(tmp / "ganesha.conf"),
                        "netroot_nfs_server_ganesha_pidfile": str(host.workdir / "ganesha.pid"),
                        "netroot_nfs_server_ganesha_log": str(tmp / "ganesha.log"),
                        "netroot_nfs_server_ganesha_service": "script",
                        "netroot_nfs_server_bin_dir": str(tmp / "bin"),
                        "netroot_nfs_server_lib_dir": str(tmp / "lib"),
                        "netroot_nfs_server_install_packages": False,
                        "netroot_tftp_root": str(tmp / "tftp"),
                        "netroot_dnsmasq_interface": "eth0",
                        "netroot_dnsmasq_network": f"{prefix}.0/24",
                        "netroot_dnsmasq_reply_delay": 0,
                        "netroot_nfs_server_dnsmasq_conf": str(tmp / "etc" / "dnsmasq.conf"),
                        "netroot_nfs_server_dnsmasq_pidfile": str(tmp / "dnsmasq.pid"),
                        "netroot_nfs_server_dnsmasq_log": str(tmp / "dnsmasq.log"),
                        # pytest's tmp dirs are 0700: the default user could not read the tree
                        "netroot_nfs_server_dnsmasq_user": "root",
                    }}},
                    "boards": {"hosts": {
                        "pi-nb": {
                            "ansible_host": host.address,  # the sshd host plays the board
                            "netroot_address": f"{prefix}.5",
                            "netroot_boot": "netboot",
                            "netroot_mac": MAC,
                            "netroot_serial": SERIAL,
                            "netroot_board_cmdline_file": str(tmp / "cmdline"),
                            "netroot_board_reboot_command": f"/bin/sh {reboot}",
                            "netroot_board_boot_id_command": f"cat {tmp / 'boot_id'}",
                        },
                    }},
                },
            }
        }  # fmt: skip
        inventory = write_inventory(tmp / "inventory.yml", data)
        lab = Lab(host, tmp, inventory)
        try:
            yield lab
        finally:
            lab.dnsmasq("stop")


def test_first_provision_starts_dnsmasq_and_boots_the_board_on_current(lab: Lab) -> None:
    result = lab.run(["pi-nb"])
    assert result.exit_code == Exit.OK, result.as_dict()
    assert result.mounted == {"pi-nb": A}
    assert f"/raspbian/versions/{A}," in lab.booted()
    assert lab.dnsmasq("status").stdout.startswith("running")
    # The config the role installed is the one netroot's dry run renders.
    rendered = {r.template: r.text for r in Renderer(load(lab.inventory)).render_server("nfs-t")}
    assert (lab.tmp / "etc" / "dnsmasq.conf").read_text() == rendered["dnsmasq.conf.j2"]
    got = lab.fetch("bootcode.bin", f"{SERIAL}/start.elf", f"{SERIAL}/cmdline.txt")
    firmware = lab.tmp / "export" / "raspbian" / "versions" / A / "boot" / "firmware"
    assert got[f"{SERIAL}/start.elf"] == (firmware / "start.elf").read_bytes()
    assert got[f"{SERIAL}/cmdline.txt"].decode().strip() == lab.booted().strip()
    assert "systemd.hostname=pi-nb" in lab.booted()
    # The TFTP tool the board play ran there: the one file netroot.bundle makes, nothing else.
    assert [p.name for p in (lab.tmp / "lib").iterdir()] == ["netroot-tftp"]
    tool = lab.tmp / "lib" / "netroot-tftp"
    assert tool.read_text() == bundle.server_program("netroot.remote.switch")
    assert tool.stat().st_mode & 0o777 == 0o755


def test_the_roles_dnsmasq_answers_the_boards_rom(lab: Lab) -> None:
    veth = lab.host.netns.replace("-", "")  # provision_hosts names the host's end so
    out = subprocess.run([sys.executable, str(ROM), "discover", veth, MAC, SERIAL, "10"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    reply = json.loads(out)
    assert reply is not None, (lab.tmp / "dnsmasq.log").read_text()[-2000:]
    options = {int(k): bytes.fromhex(v) for k, v in reply["options"].items()}
    assert options[60] == b"PXEClient"
    assert b"Raspberry Pi Boot   " in parse_options(options[43] + b"\xff")[9]


def test_a_second_run_changes_nothing(lab: Lab) -> None:
    again = lab.run(["pi-nb"])
    assert again.exit_code == Exit.OK, again.as_dict()
    changed = {h: s.changed for h, s in again.summary.hosts.items()}
    assert changed == {"nfs-t": 0, "pi-nb": 0}, lab.changed_tasks


def test_check_mode_writes_nothing(lab: Lab) -> None:
    link = os.readlink(lab.tftp / SERIAL)
    conf = (lab.tmp / "etc" / "dnsmasq.conf").read_bytes()
    before = lab.booted()
    result = lab.run(["pi-nb"], versions={"pi-nb": B}, check=True, diff=True)
    assert result.exit_code == Exit.OK, result.as_dict()
    assert result.summary.hosts["pi-nb"].changed > 0  # it would repoint the board
    assert os.readlink(lab.tftp / SERIAL) == link
    assert not (lab.tftp / ".versions" / B).exists()
    assert (lab.tmp / "etc" / "dnsmasq.conf").read_bytes() == conf
    assert lab.booted() == before
    # A check before the server was ever provisioned for netboot: no tool there yet.
    fresh = {"netroot_nfs_server_lib_dir": str(lab.tmp / "no-lib"),
             "netroot_tftp_root": str(lab.tmp / "no-tftp")}  # fmt: skip
    first = lab.run(["pi-nb"], check=True, extra_vars=fresh)
    assert first.exit_code == Exit.OK, first.as_dict()
    assert first.summary.hosts["pi-nb"].changed > 0
    assert not (lab.tmp / "no-lib").exists() and not (lab.tmp / "no-tftp").exists()


def test_switching_the_version_repoints_the_directory_and_reboots(lab: Lab) -> None:
    result = lab.run(["pi-nb"], versions={"pi-nb": B})
    assert result.exit_code == Exit.OK, result.as_dict()
    assert result.mounted == {"pi-nb": B}
    assert f"/raspbian/versions/{B}," in lab.booted()
    assert os.readlink(lab.tftp / SERIAL).split("-")[1] == B
    assert not (lab.tftp / ".versions" / A).exists()  # no board boots A any more
    back = lab.run(["pi-nb"], versions={"pi-nb": A})  # a rollback is the same switch
    assert back.mounted == {"pi-nb": A}, back.as_dict()


def test_an_invalid_dnsmasq_config_is_refused_and_the_old_one_keeps_serving(lab: Lab) -> None:
    conf = lab.tmp / "etc" / "dnsmasq.conf"
    before = conf.read_bytes()
    pid = lab.dnsmasq("status").stdout.split()[1]
    # An extra var gets past the inventory's checks; dnsmasq --test is the last line of defence.
    bad = lab.run(["nfs-t"], extra_vars={"netroot_dnsmasq_network": "10.300.0.0/24"})
    assert bad.exit_code == Exit.FAILED
    (failure,) = bad.summary.failures
    assert failure.task == "The dnsmasq config (proxy-DHCP + TFTP)", bad.as_dict()
    assert failure.message.startswith("failed to validate: dnsmasq: bad dhcp-range"), failure
    assert conf.read_bytes() == before
    assert lab.dnsmasq("status").stdout.split()[1] == pid  # not restarted
    assert lab.fetch(f"{SERIAL}/cmdline.txt")  # still serving


def test_a_hung_board_is_power_cycled_from_the_control_host(lab: Lab) -> None:
    data = yaml.safe_load(lab.inventory.read_text())
    hosts = data["all"]["children"]["boards"]["hosts"]
    flag = lab.tmp / "power-cycled"
    hosts["pi-hung"] = {
        **hosts["pi-nb"],
        "ansible_host": lab.host.spare,  # nothing answers there
        "netroot_address": lab.host.spare,
        "netroot_mac": "b8:27:eb:12:34:57",
        "netroot_serial": "1a2b3c4e",
        "netroot_power_cycle_cmd": f"echo cycled >> {flag}",
        "netroot_board_reboot_timeout": 3,
        # Nothing answers there, so every try is the same "No route to host": one try per
        # connection (the retries of a busy board are test_busy_host's) rather than 3 x 3 s.
        "ansible_ssh_retries": 0,
    }
    inventory = write_inventory(lab.tmp / "inventory-hung.yml", data)
    result = provision(load(inventory), ["pi-hung"])
    assert flag.read_text() == "cycled\n"  # once, on the control host
    assert result.summary.hosts["pi-hung"].state == "unreachable", result.as_dict()
    assert result.exit_code == Exit.UNREACHABLE
    assert os.readlink(lab.tftp / "1a2b3c4e").split("-")[1] == A  # its directory is ready
