"""dnsmasq's proxy-DHCP config: the inventory's netboot boards only, the 3B ROM workarounds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netroot.errors import UsageError
from netroot.inventory import Inventory
from netroot.netboot import dnsmasq
from netroot.netboot.cmdline import board_boots, cmdline
from netroot.templating import Renderer

GOLDEN = Path(__file__).parent / "golden_dnsmasq.conf"


def config(inventory: Inventory, **kw: object) -> dnsmasq.ProxyConfig:
    return dnsmasq.proxy_config(list(inventory.boards.values()), "nb-srv", "10.88.0.0/24",
                                "/srv/tftp", **kw)  # type: ignore[arg-type]  # fmt: skip


def test_rendered_config_matches_the_golden_file(inventory: Inventory) -> None:
    text = dnsmasq.render(config(inventory))
    if os.environ.get("NETROOT_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_only_netboot_boards_are_answered_by_mac(inventory: Inventory) -> None:
    text = dnsmasq.render(config(inventory))
    hosts = [line for line in text.splitlines() if line.startswith("dhcp-host=")]
    assert hosts == ["dhcp-host=b8:27:eb:00:00:01,set:netroot_board",
                     "dhcp-host=b8:27:eb:00:00:02,set:netroot_board"]  # fmt: skip
    assert "dhcp-ignore=tag:!netroot_board" in text.splitlines()
    assert "dhcp-range=10.88.0.0,proxy" in text.splitlines()


def test_rom_workarounds_are_on_by_default_and_can_be_turned_off(inventory: Inventory) -> None:
    lines = dnsmasq.render(config(inventory)).splitlines()
    assert 'pxe-service=tag:netroot_board,0,"Raspberry Pi Boot   "' in lines  # three spaces
    assert "dhcp-reply-delay=tag:netroot_board,1" in lines
    plain = dnsmasq.render(config(inventory, rom_workarounds=False)).splitlines()
    assert 'pxe-service=tag:netroot_board,0,"Raspberry Pi Boot"' in plain
    assert not any(line.startswith("dhcp-reply-delay") for line in plain)


def test_bad_settings_are_refused_with_the_field(inventory: Inventory) -> None:
    with pytest.raises(UsageError, match=r"netboot network '10\.88\.0\.0/33'"):
        dnsmasq.proxy_config(list(inventory.boards.values()), "x", "10.88.0.0/33", "/t")
    with pytest.raises(UsageError, match="0 to 60 seconds"):
        config(inventory, reply_delay=61)
    with pytest.raises(UsageError, match="no board has netroot_boot: netboot"):
        dnsmasq.proxy_config([inventory.boards["pi-03"]], "x", "10.88.0.0/24", "/t")


def test_cmdline_is_the_board_roles_template(inventory: Inventory) -> None:
    line = cmdline(Renderer(inventory), "pi-01", "0123456789abcdef")
    assert "\n" not in line
    words = line.split()
    assert "root=/dev/nfs" in words and "ro" in words and "netroot.overlay=tmpfs" in words
    assert ("nfsroot=10.88.0.1:/srv/netroot/raspbian/versions/0123456789abcdef,vers=3,tcp,"
            "nolock,hard,timeo=600,retrans=2,"
            "nocto,actimeo=86400,lookupcache=all") in words  # fmt: skip
    assert "systemd.hostname=pi-01" in words
    machine = next(w for w in words if w.startswith("systemd.machine_id="))
    assert len(machine.split("=")[1]) == 32  # 128-bit hex, as systemd wants it
    other = cmdline(Renderer(inventory), "pi-02", "0123456789abcdef")
    assert machine not in other.split()  # each board its own identity


def test_board_boots_pairs_serials_with_versions(inventory: Inventory) -> None:
    boards = [inventory.boards["pi-01"], inventory.boards["pi-02"]]
    boots = board_boots(Renderer(inventory), boards, {"pi-01": "a" * 16, "pi-02": "b" * 16})
    assert [(b.serial, b.version) for b in boots] == [("1a2b3c01", "a" * 16),
                                                      ("1a2b3c02", "b" * 16)]  # fmt: skip
    with pytest.raises(UsageError, match="pi-02: no version to boot"):
        board_boots(Renderer(inventory), boards, {"pi-01": "a" * 16})
