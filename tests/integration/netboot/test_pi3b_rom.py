"""The Pi 3B netboot path without a Pi: dnsmasq with netroot's config in a network namespace
this test creates, a DISCOVER shaped like the 3B ROM's, then the board's files over TFTP.

No traffic leaves the namespace: both ends of the veth pair live in it and every address is
one the test gave them.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from netroot.inventory import load
from netroot.netboot import dnsmasq, install
from netroot.netboot.cmdline import board_boots
from netroot.remote import tree
from netroot.templating import Renderer
from tests.integration.netboot.pxe_rom import parse_options

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("dnsmasq") is None, reason="dnsmasq not installed (.ci/setup)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]

ROM = Path(__file__).with_name("pxe_rom.py")
SERVER, BOARD_ADDRESS, NETWORK = "10.213.7.1", "10.213.7.50", "10.213.7.0/24"
MAC, SERIAL, STRANGER = "b8:27:eb:12:34:56", "1a2b3c4d", "b8:27:eb:99:99:99"
A, B = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"
FILES = ("start.elf", "fixup.dat", "config.txt", "kernel7.img", "bcm2710-rpi-3-b.dtb",
         "overlays/vc4-kms-v3d.dtbo")  # fmt: skip
INVENTORY = f"""all:
  children:
    nfs_servers:
      hosts:
        nfs-01: {{ansible_host: {SERVER}, netroot_export_root: /srv/netroot}}
    boards:
      hosts:
        pi-01: {{ansible_host: {BOARD_ADDRESS}, netroot_address: {BOARD_ADDRESS},
                netroot_boot: netboot, netroot_mac: "{MAC}", netroot_serial: {SERIAL}}}
"""


def ns_run(ns: str, *cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True,
                          check=True)  # fmt: skip


@dataclass(frozen=True)
class Namespaces:
    server: str  # holds nb-srv, where dnsmasq runs
    rom: str  # holds nb-rom, the Pi's end


@pytest.fixture
def netns() -> Iterator[Namespaces]:
    """Two namespaces joined by a veth pair: nb-srv (the server) and nb-rom (the Pi).

    Two, not one: in a single namespace the board's address would be local to the server's
    side too, and the kernel drops such packets as martians.
    """
    names = Namespaces(f"netroot-nbsrv-{os.getpid()}", f"netroot-nbrom-{os.getpid()}")
    try:
        for name in (names.server, names.rom):
            subprocess.run(["ip", "netns", "add", name], check=True)
            ns_run(name, "ip", "link", "set", "lo", "up")
        ns_run(names.server, "ip", "link", "add", "nb-srv", "type", "veth", "peer", "name",
               "nb-rom", "netns", names.rom)  # fmt: skip
        ns_run(names.rom, "ip", "link", "set", "nb-rom", "address", MAC)
        ns_run(names.server, "ip", "addr", "add", f"{SERVER}/24", "dev", "nb-srv")
        # The address the site's own DHCP server would give the board (proxy-DHCP gives none).
        ns_run(names.rom, "ip", "addr", "add", f"{BOARD_ADDRESS}/24", "dev", "nb-rom")
        ns_run(names.server, "ip", "link", "set", "nb-srv", "up")
        ns_run(names.rom, "ip", "link", "set", "nb-rom", "up")
        yield names
    finally:
        for name in (names.server, names.rom):
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def make_version(root: Path, version: str) -> Path:
    """A version whose /boot/firmware holds distinct bytes per file (start.elf spans blocks)."""
    base = root / version / "boot/firmware"
    for rel in ("bootcode.bin", *FILES, "cmdline.txt"):
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        size = 70_000 if rel == "start.elf" else 1024 if rel == "bootcode.bin" else 300
        path.write_bytes(f"{version}:{rel}:".encode() + os.urandom(size))
    return root / version


@dataclass
class Server:
    ns: Namespaces
    conf: Path
    tftp: Path
    versions: Path
    log: Path

    def fetch(self, *names: str) -> dict[str, bytes]:
        out = ns_run(self.ns.rom, sys.executable, str(ROM), "tftp", SERVER, *names).stdout
        return {k: base64.b64decode(v) for k, v in json.loads(out).items()}

    def discover(self, mac: str, wait: float) -> dict[str, object] | None:
        out = ns_run(self.ns.rom, sys.executable, str(ROM), "discover", "nb-rom", mac, SERIAL,
                     str(wait)).stdout  # fmt: skip
        reply: dict[str, object] | None = json.loads(out)
        return reply


def plan_and_apply(work: Path, inventory_path: Path, version: str) -> list[str]:
    inv = load(inventory_path)
    boots = board_boots(Renderer(inv), [inv.boards["pi-01"]], {"pi-01": version})
    scanned = {version: tree.scan_version(version, work / "versions" / version)}
    return tree.apply_tree(tree.plan_tree(work / "tftp", boots, scanned))


@pytest.fixture
def server(netns: Namespaces, tmp_path: Path) -> Iterator[Server]:
    inventory_path = tmp_path / "inventory.yml"
    inventory_path.write_text(INVENTORY)
    for version in (A, B):
        make_version(tmp_path / "versions", version)
    plan_and_apply(tmp_path, inventory_path, A)
    config = dnsmasq.proxy_config(list(load(inventory_path).boards.values()), "nb-srv", NETWORK,
                                  str(tmp_path / "tftp"))  # fmt: skip
    conf, log = tmp_path / "dnsmasq.conf", tmp_path / "dnsmasq.log"
    assert install.install(dnsmasq.render(config), conf)  # dnsmasq --test accepted it
    # --user=root: pytest's tmp dirs are 0700, so dnsmasq's default user could not read them.
    daemon = ["dnsmasq", "--keep-in-foreground", f"--conf-file={conf}", f"--log-facility={log}",
              f"--pid-file={tmp_path / 'dnsmasq.pid'}", "--user=root", "--group=root"]  # fmt: skip
    proc = subprocess.Popen(["ip", "netns", "exec", netns.server, *daemon],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        while not (log.exists() and "TFTP root is" in log.read_text()):
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"dnsmasq exited {proc.returncode}: {err}")
            time.sleep(0.1)
        yield Server(netns, conf, tmp_path / "tftp", tmp_path / "versions", log)
    finally:
        proc.terminate()
        proc.wait()


def test_the_3b_roms_discover_gets_the_proxy_reply(server: Server) -> None:
    reply = server.discover(MAC, wait=20)
    assert reply is not None, server.log.read_text()
    options = {int(k): bytes.fromhex(v) for k, v in reply["options"].items()}  # type: ignore[attr-defined]
    assert options[53] == b"\x02"  # OFFER
    # The 3B ROM fetches bootcode.bin from the proxy reply's server identifier (the dnsmasq
    # log in raspberrypi/firmware #1605: option 54 names the server bootcode.bin then comes from).
    assert options[54] == bytes(map(int, SERVER.split(".")))
    assert options[60] == b"PXEClient"
    assert reply["chaddr"] == MAC
    assert 50 not in options and 51 not in options  # proxy-DHCP: no address, no lease
    pxe = parse_options(options[43] + b"\xff")
    menu = pxe[9]  # PXE boot menu: type (2), description length (1), description
    assert menu[:2] == b"\x00\x00"
    assert menu[3 : 3 + menu[2]] == b"Raspberry Pi Boot   "  # the trailing spaces old ROMs need
    assert "PXE(nb-srv) b8:27:eb:12:34:56 proxy" in server.log.read_text()


def test_a_mac_outside_the_inventory_gets_no_answer(server: Server) -> None:
    assert server.discover(STRANGER, wait=4) is None
    assert "PXE(nb-srv) b8:27:eb:99:99:99 proxy-ignored" in server.log.read_text()


def test_the_rom_reads_bootcode_then_the_boards_directory(server: Server) -> None:
    names = ["bootcode.bin", *(f"{SERIAL}/{f}" for f in FILES), f"{SERIAL}/cmdline.txt"]
    got = server.fetch(*names)
    firmware = server.versions / A / "boot/firmware"
    assert got["bootcode.bin"] == (firmware / "bootcode.bin").read_bytes()
    for name in FILES:
        assert got[f"{SERIAL}/{name}"] == (firmware / name).read_bytes(), name
    cmdline = got[f"{SERIAL}/cmdline.txt"].decode()
    assert f"nfsroot={SERVER}:/srv/netroot/raspbian/versions/{A},vers=3,tcp" in cmdline
    assert " ro " in cmdline and "netroot.overlay=tmpfs" in cmdline
    assert "systemd.hostname=pi-01" in cmdline


def test_switching_the_board_is_seen_by_the_next_boot(server: Server) -> None:
    changes = plan_and_apply(server.tftp.parent, server.tftp.parent / "inventory.yml", B)
    assert f"pi-01 ({SERIAL}) -> {B}" in changes
    got = server.fetch(f"{SERIAL}/start.elf", f"{SERIAL}/cmdline.txt")
    assert (
        got[f"{SERIAL}/start.elf"] == (server.versions / B / "boot/firmware/start.elf").read_bytes()
    )
    assert f"/versions/{B}," in got[f"{SERIAL}/cmdline.txt"].decode()


def test_an_invalid_config_is_refused_and_the_old_one_kept(server: Server) -> None:
    before = server.conf.read_bytes()
    bad = before.decode().replace("dhcp-reply-delay=tag:netroot_board,1", "dhcp-reply-delay=soon")
    with pytest.raises(install.ConfigRefused, match="dnsmasq refused the new config") as err:
        install.install(bad, server.conf)
    assert "error at line" in str(err.value)
    assert server.conf.read_bytes() == before
    assert server.discover(MAC, wait=20) is not None  # still serving
