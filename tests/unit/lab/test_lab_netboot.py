"""The lab's diskless boards as data: plan, inventory, dnsmasq config, qemu command line."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from netroot.errors import UsageError
from netroot.inventory import parse
from netroot.lab import render
from netroot.lab.host.boards import BoardFiles
from netroot.lab.host.diskless import qemu_argv
from netroot.lab.plan import make_plan, netboot_plan, stable_mac
from netroot.lab.state import HostStatus, LabStatus
from netroot.netboot import dnsmasq

POWER = ("env", "NETROOT_HOME=/state", "/venv/bin/python", "-m", "netroot", "lab", "power-cycle")


def test_diskless_boards_have_their_own_addresses_serials_and_taps() -> None:
    nb = netboot_plan(2)
    assert (nb.name, nb.address, nb.tap, nb.serial) == ("nb-02", "10.77.0.52", "nrnb2", "4e420002")
    assert nb.mac == stable_mac("10.77.0.52") and nb.netboot
    plan = make_plan(1, Path("/lab"), netboot=2)
    assert [b.name for b in plan.all_boards] == ["pi-01", "nb-01", "nb-02"]
    assert not plan.boards[0].netboot


def test_zero_sd_boards_only_with_diskless_ones() -> None:
    assert make_plan(0, Path("/lab"), netboot=1).boards == ()
    with pytest.raises(UsageError, match="0 with --netboot"):
        make_plan(0, Path("/lab"))
    with pytest.raises(UsageError, match="--netboot 9"):
        make_plan(1, Path("/lab"), netboot=9)


def test_inventory_has_the_diskless_boards_and_the_servers_dnsmasq() -> None:
    plan = make_plan(1, Path("/lab"), Path("/srv/export"), netboot=2)
    data = yaml.safe_load(render.inventory_yaml(plan, POWER))
    inv = parse(data, Path("inventory.yml"))
    nb = inv.boards["nb-01"]
    assert (
        nb.mode.served_over_tftp and nb.serial == "4e420001" and nb.mac == stable_mac("10.77.0.51")
    )
    assert nb.image == "raspbian-netboot"
    assert set(inv.groups["lab_netboot"]) == {"nb-01", "nb-02"}
    assert set(inv.groups["lab"]) == {"pi-01"}  # the SD boards' group keeps its meaning
    host = data["all"]["children"]["boards"]["children"]["lab_netboot"]["hosts"]["nb-02"]
    assert shlex.split(host["netroot_power_cycle_cmd"]) == [*POWER, "nb-02"]
    assert host["netroot_cmdline_console"] == "console=ttyAMA0"
    config = dnsmasq.server_config(inv.server, list(inv.boards.values()))
    assert config.addresses and config.reply_delay == 0
    text = dnsmasq.render(config)
    assert "dhcp-range=10.77.0.0,static" in text
    assert f"dhcp-host={stable_mac('10.77.0.51')},set:netroot_board,10.77.0.51,infinite" in text
    assert "dhcp-boot=tag:netroot_4e420002,4e420002/pxelinux.0" in text


def test_an_sd_only_lab_has_no_dnsmasq() -> None:
    data = yaml.safe_load(render.inventory_yaml(make_plan(2, Path("/lab"))))
    assert (
        "netroot_dnsmasq_interface" not in data["all"]["children"]["nfs_servers"]["hosts"]["nfs-01"]
    )
    assert "lab_netboot" not in data["all"]["children"]["boards"]["children"]


def test_dnsmasq_refuses_to_hand_out_an_address_outside_its_network() -> None:
    plan = make_plan(0, Path("/lab"), netboot=1)
    inv = parse(yaml.safe_load(render.inventory_yaml(plan)), Path("inventory.yml"))
    with pytest.raises(
        UsageError, match=r"nb-01: address '10\.77\.0\.51' is not in 10\.9\.0\.0/24"
    ):
        dnsmasq.proxy_config(list(inv.boards.values()), "eth0", "10.9.0.0/24", "/t", addresses=True)


def test_a_diskless_board_has_no_drive_and_boots_uboot_from_an_e1000() -> None:
    argv = qemu_argv(netboot_plan(1), BoardFiles(Path("/lab/boards/nb-01")), Path("/u-boot.bin"))
    assert "-drive" not in argv and "-kernel" not in argv
    assert argv[argv.index("-bios") + 1] == "/u-boot.bin"
    assert f"e1000,netdev=lan,mac={stable_mac('10.77.0.51')},romfile=" in argv
    assert "-no-reboot" not in argv  # a reboot is a network boot again, in the same process
    assert argv[argv.index("-pidfile") + 1] == "/lab/boards/nb-01/qemu.pid"


def test_a_lab_is_up_without_its_diskless_boards_answering() -> None:
    server = HostStatus("nfs-01", "server", "10.77.0.2", 1, True, True)
    off = HostStatus("nb-01", "diskless", "10.77.0.51", None, False, False)
    assert LabStatus(True, (server, off), "inv", 0).up
    assert not LabStatus(True, (server,), "inv", 0).up


def test_files_tar_puts_the_seeds_under_the_tftp_root() -> None:
    import io
    import tarfile

    from netroot.lab.host.disk import files_tar

    data = files_tar("/srv/netroot-tftp/seeds", {"01-52-54-00-77-00-33.tar": b"seed"})
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert list(members) == [
            "srv",
            "srv/netroot-tftp",
            "srv/netroot-tftp/seeds",
            "srv/netroot-tftp/seeds/01-52-54-00-77-00-33.tar",
        ]
        seed = members["srv/netroot-tftp/seeds/01-52-54-00-77-00-33.tar"]
        assert (seed.mode, seed.uid) == (0o644, 0)  # dnsmasq (its own user) serves it
        assert all(m.mode == 0o755 for m in members.values() if m.isdir())
