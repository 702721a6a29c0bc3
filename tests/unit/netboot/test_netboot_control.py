"""The control side of netboot boards: the booted version read back from /proc/cmdline, status,
what provision renders, and smoke commands on the booted root (no chroot)."""

from __future__ import annotations

from pathlib import Path

from netroot.bootmode.netboot import NFSROOT_PATTERN, NetBoot, booted_version
from netroot.bootmode.sd import CHROOT
from netroot.fleet.boardfacts import MARK, BoardFacts, parse_probe
from netroot.fleet.desired import Desired
from netroot.fleet.state import State
from netroot.fleet.status import board_status
from netroot.inventory import Inventory
from netroot.netboot.cmdline import cmdline
from netroot.smoke.backend import in_version
from netroot.templating import BOARD_ROLE, Renderer, role_defaults

A, B = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"
# A Pi's /proc/cmdline: the firmware prepends its own words to cmdline.txt's.
FIRMWARE = (
    "coherent_pool=1M 8250.nr_uarts=0 bcm2708_fb.fbwidth=656 smsc95xx.macaddr=B8:27:EB:00:00:01"
)


def test_the_booted_version_is_read_from_the_cmdline_the_role_renders(inventory: Inventory) -> None:
    line = cmdline(Renderer(inventory), "pi-01", A)
    assert booted_version(f"{FIRMWARE} {line}\n") == A
    assert booted_version(f"root=/dev/nfs nfsroot=10.0.0.1:/x/versions/{B}\n") == B
    assert booted_version("root=/dev/mmcblk0p2 rootwait") is None
    assert booted_version(f"nfsroot=10.0.0.1:/x/versions/{A}x,vers=3") is None  # not a version id


def test_the_board_role_reads_it_with_the_same_pattern() -> None:
    assert role_defaults(BOARD_ROLE)["netroot_board_nfsroot_pattern"] == NFSROOT_PATTERN


def test_status_probe_of_a_netboot_board(inventory: Inventory) -> None:
    line = cmdline(Renderer(inventory), "pi-01", A)
    out = f"{MARK}\n{MARK}\n{FIRMWARE} {line}\n"  # no /etc/netroot, no /run/netroot on it
    assert parse_probe(out, NetBoot()) == BoardFacts(None, A, boot="netboot")
    assert parse_probe(f"{A}\n{MARK}\n{A}\n{MARK}\nroot=/dev/mmcblk0p2\n") == BoardFacts(A, A)
    assert parse_probe(f"{A}\n--netroot--\n{B}\n") == BoardFacts(A, B)  # an older board's probe


def test_status_drift_of_a_netboot_board_compares_what_it_booted(inventory: Inventory) -> None:
    boards = [inventory.boards["pi-01"], inventory.boards["pi-02"]]
    observed = {
        "pi-01": (BoardFacts(None, A, boot="netboot"), ""),
        "pi-02": (BoardFacts(None, None, boot="netboot"), ""),
    }
    desired = {"pi-01": Desired(B, "assigned"), "pi-02": Desired(A, "current")}
    rows = {
        r.board: r for r in board_status(boards, State(Path("/nonexistent")), observed, desired)
    }
    assert rows["pi-01"].mounted == A and rows["pi-01"].drift == f"should run {B}, booted {A}"
    assert rows["pi-02"].drift.startswith("booted no netroot version")
    desired["pi-01"] = Desired(A, "pin")
    rows = {
        r.board: r for r in board_status(boards, State(Path("/nonexistent")), observed, desired)
    }
    assert rows["pi-01"].drift == ""


def test_provision_renders_the_cmdline_for_a_netboot_board_not_the_mount_scripts(
    inventory: Inventory,
) -> None:
    renderer = Renderer(inventory)
    assert [r.template for r in renderer.render_board("pi-01", A)] == ["cmdline.txt.j2"]
    assert "netroot-mount.j2" in [r.template for r in renderer.render_board("pi-03", A)]


def test_the_server_renders_dnsmasq_only_when_a_board_netboots(
    inventory: Inventory, tmp_path: Path
) -> None:
    server = inventory.hosts["nfs-01"]
    vars_ = {**server.vars, "netroot_dnsmasq_interface": "br0",
             "netroot_dnsmasq_network": "10.88.0.0/24"}  # fmt: skip
    hosts = {**inventory.hosts, "nfs-01": type(server)(server.name, vars_, server.groups)}
    inv = type(inventory)(inventory.path, hosts, inventory.groups, inventory.boards,
                          inventory.servers)  # fmt: skip
    rendered = {r.template: r.text for r in Renderer(inv).render_server("nfs-01")}
    assert set(rendered) == {"ganesha.conf.j2", "netroot-ganesha.j2", "dnsmasq.conf.j2",
                             "netroot-dnsmasq.j2", "_nfs_server_state.sh.j2"}  # fmt: skip
    # The server's state covers dnsmasq's files and service (a change is configured again).
    assert "/etc/netroot/dnsmasq.conf" in rendered["_nfs_server_state.sh.j2"]
    assert "netroot-dnsmasq status" in rendered["_nfs_server_state.sh.j2"]
    conf = rendered["dnsmasq.conf.j2"].splitlines()
    assert "interface=br0" in conf and "dhcp-range=10.88.0.0,proxy" in conf
    assert "tftp-root=/srv/netroot-tftp" in conf
    assert [line for line in conf if line.startswith("dhcp-host=")] == [
        "dhcp-host=b8:27:eb:00:00:01,set:netroot_board",
        "dhcp-host=b8:27:eb:00:00:02,set:netroot_board",
    ]
    sd_only = type(inventory)(inventory.path, hosts, inventory.groups,
                              {"pi-03": inventory.boards["pi-03"]}, inventory.servers)  # fmt: skip
    sd_groups = {**inventory.groups, "boards": frozenset({"pi-03"})}
    sd_only = type(inventory)(inventory.path, hosts, sd_groups, sd_only.boards, inventory.servers)
    sd_rendered = {r.template: r.text for r in Renderer(sd_only).render_server("nfs-01")}
    assert set(sd_rendered) == {"ganesha.conf.j2", "netroot-ganesha.j2", "_nfs_server_state.sh.j2"}
    assert "netroot-dnsmasq" not in sd_rendered["_nfs_server_state.sh.j2"]


def test_smoke_commands_run_on_a_netboot_boards_booted_root(inventory: Inventory) -> None:
    assert in_version(inventory.boards["pi-01"], "cat /etc/hostname") == "cat /etc/hostname"
    sd = in_version(inventory.boards["pi-03"], "cat /etc/hostname")
    assert sd == f"{CHROOT} /bin/sh -c 'cat /etc/hostname'"
