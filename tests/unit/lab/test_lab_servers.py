"""`lab up --servers N` as data: the servers' plan, the boards dealt out, the inventory, seeds."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import yaml

from netroot.errors import UsageError
from netroot.inventory import parse
from netroot.lab import render
from netroot.lab.host import seeds, servervm
from netroot.lab.host.boards import BoardFiles
from netroot.lab.plan import letting_go, make_plan, moved_boards, stable_mac


def _members(tar_bytes: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        return {
            m.name: fh.read()
            for m in tar.getmembers()
            if m.isfile() and (fh := tar.extractfile(m)) is not None
        }


def test_two_servers_get_their_own_address_names_and_export_root() -> None:
    plan = make_plan(3, Path("/lab"), Path("/srv/export"), servers=2)
    one, two = plan.nfs
    assert [(s.name, s.address) for s in plan.nfs] == [
        ("nfs-01", "10.77.0.2"),
        ("nfs-02", "10.77.0.3"),
    ]
    # nfs-01 keeps a one-server lab's names: a running lab stays what it was.
    assert (one.container, one.veth, one.tap) == ("netroot-lab-nfs-01", "nr-srv-br", "nrsrv0")
    assert (one.dir(plan.lab_dir), one.vm_dir(plan.lab_dir)) == (
        Path("/lab/server"),
        Path("/lab/server-vm"),
    )
    assert (two.container, two.veth, two.tap) == ("netroot-lab-nfs-02", "nr-srv2-br", "nrsrv1")
    assert two.vm_dir(plan.lab_dir) == Path("/lab/server-vm-nfs-02")
    assert two.dir(plan.lab_dir) != one.dir(plan.lab_dir)
    assert two.mac == stable_mac("10.77.0.3") != one.mac
    for srv in plan.nfs:  # Linux interface names: at most 15 characters
        assert len(srv.veth) <= 15 and len(srv.tap) <= 15
    # Ganesha serves directories of this host: one each. A kernel VM's is its own disk.
    assert (one.export_root, two.export_root) == (
        Path("/srv/export"),
        Path("/srv/export-nfs-02"),
    )
    kernel = make_plan(2, Path("/lab"), Path("/srv/export"), server="kernel", servers=2)
    assert {s.export_root for s in kernel.nfs} == {Path("/srv/export")}
    assert make_plan(2, Path("/lab")).nfs == (make_plan(2, Path("/lab"), servers=1).nfs[0],)


def test_boards_are_dealt_out_in_turn_so_growing_moves_no_board() -> None:
    plan = make_plan(5, Path("/lab"), servers=2, netboot=2)
    served = {b.name: plan.server_of(b).name for b in plan.all_boards}
    assert served == {
        "pi-01": "nfs-01",
        "pi-02": "nfs-02",
        "pi-03": "nfs-01",
        "pi-04": "nfs-02",
        "pi-05": "nfs-01",
        "nb-01": "nfs-01",
        "nb-02": "nfs-02",
    }
    assert [b.name for b in plan.boards_of(plan.nfs[1])] == ["pi-02", "pi-04", "nb-02"]
    grown = make_plan(7, Path("/lab"), servers=2)
    assert all(grown.server_of(b) == plan.server_of(b) for b in plan.boards)


def test_boards_whose_server_changes_are_named_with_their_old_server() -> None:
    two = make_plan(3, Path("/lab"), servers=2)
    one = make_plan(3, Path("/lab"))
    assert [(b.name, old) for b, old in moved_boards(two, 1)] == [("pi-02", 1)]
    assert [(b.name, old) for b, old in moved_boards(one, 2)] == [("pi-02", 2)]
    assert moved_boards(two, 2) == [] and moved_boards(one, 1) == []


def test_boards_whose_server_changes_unmount_and_diskless_ones_power_off() -> None:
    def names(plan_and_was: tuple[int, int, int]) -> tuple[list[str], list[str]]:
        servers, was, netboot = plan_and_was
        plan = make_plan(4, Path("/lab"), servers=servers, netboot=netboot)
        unmount, power_off = letting_go(plan, was)
        return [b.name for b in unmount], [b.name for b in power_off]

    # Growing: pi-02 and pi-04 move to nfs-02 and let go of nfs-01; provision mounts them.
    assert names((2, 1, 0)) == (["pi-02", "pi-04"], [])
    # Shrinking: nfs-02 goes away; its boards unmount first. A diskless board's root moves.
    assert names((1, 2, 2)) == (["pi-02", "pi-04"], ["nb-02"])
    assert names((2, 1, 2)) == (["pi-02", "pi-04"], ["nb-02"])
    # 3 -> 2: pi-03 (nfs-03 goes) and pi-04 (nfs-01 -> nfs-02) move; pi-01, pi-02 stay.
    assert names((2, 3, 0)) == (["pi-03", "pi-04"], [])
    assert names((2, 2, 2)) == ([], [])


@pytest.mark.parametrize(
    ("boards", "servers", "match"),
    [(2, 0, "--servers 0"), (4, 5, "--servers 5"), (1, 2, r"--servers 2 with 1 board\(s\)")],
)
def test_bad_server_counts_are_usage_errors(boards: int, servers: int, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        make_plan(boards, Path("/lab"), servers=servers)


def test_inventory_lists_both_servers_and_names_each_boards_own() -> None:
    plan = make_plan(3, Path("/lab"), Path("/srv/export"), servers=2)
    data = yaml.safe_load(render.inventory_yaml(plan))
    servers = data["all"]["children"]["nfs_servers"]["hosts"]
    assert {n: (s["ansible_host"], s["netroot_nfs_address"]) for n, s in servers.items()} == {
        "nfs-01": ("10.77.0.2", "10.77.0.2"),
        "nfs-02": ("10.77.0.3", "10.77.0.3"),
    }
    assert servers["nfs-02"]["netroot_export_root"] == "/srv/export-nfs-02"
    lab = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    assert {n: h["netroot_nfs_server"] for n, h in lab.items()} == {
        "pi-01": "nfs-01",
        "pi-02": "nfs-02",
        "pi-03": "nfs-01",
    }
    inv = parse(data, Path("inventory.yml"))
    assert list(inv.servers) == ["nfs-01", "nfs-02"]
    assert inv.server_of("pi-02").address == "10.77.0.3"
    assert [b.name for b in inv.boards_of("nfs-01")] == ["pi-01", "pi-03"]
    assert inv.server.name == "nfs-01"  # the fleet's home: the first server
    # One server: every board's by default, so the inventory names none.
    single = yaml.safe_load(render.inventory_yaml(make_plan(3, Path("/lab"))))
    hosts = single["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    assert not any("netroot_nfs_server" in h for h in hosts.values())


def test_kernel_servers_are_each_reached_as_a_sudo_user_with_a_remote_root() -> None:
    plan = make_plan(2, Path("/lab"), Path("/srv/export"), server="kernel", servers=2)
    inv = parse(yaml.safe_load(render.inventory_yaml(plan)), Path("inventory.yml"))
    for srv in inv.servers.values():
        assert (srv.backend, srv.remote, srv.export_root) == ("kernel", True, "/srv/export")
        assert srv.host.vars["ansible_user"] == "admin" and srv.host.vars["ansible_become"]


def test_only_a_server_with_diskless_boards_runs_dnsmasq_and_gets_their_seeds(
    tmp_path: Path,
) -> None:
    plan = make_plan(2, tmp_path, servers=2, netboot=1)  # nb-01 is nfs-01's
    data = yaml.safe_load(render.inventory_yaml(plan))
    servers = data["all"]["children"]["nfs_servers"]["hosts"]
    assert "netroot_dnsmasq_interface" in servers["nfs-01"]
    assert "netroot_dnsmasq_interface" not in servers["nfs-02"]
    nb = data["all"]["children"]["boards"]["children"]["lab_netboot"]["hosts"]["nb-01"]
    assert nb["netroot_nfs_server"] == "nfs-01"
    two = make_plan(2, tmp_path, servers=2, netboot=2)
    for srv in two.nfs:
        (board,) = [b for b in two.boards_of(srv) if b.netboot]
        BoardFiles(board.dir(tmp_path)).dir.mkdir(parents=True, exist_ok=True)
        names = _members(seeds.netboot_seeds(two, srv, "ssh-ed25519 AAAA lab"))
        assert list(names) == [f"srv/netroot-tftp/seeds/01-{board.mac.replace(':', '-')}.tar"], (
            srv.name
        )


def test_second_server_vm_has_its_own_seed_tap_mac_and_name(tmp_path: Path) -> None:
    plan = make_plan(2, tmp_path, Path("/srv/export"), server="kernel", servers=2)
    two = plan.nfs[1]
    files = _members(seeds.server_vm_seed(plan, two, "ssh-ed25519 AAAA lab"))
    network = files["etc/systemd/network/10-netroot-lab.network"].decode()
    assert f"MACAddress={stable_mac('10.77.0.3')}" in network
    assert "Address=10.77.0.3/24" in network
    assert b"127.0.1.1 nfs-02\n" in files["etc/hosts"]
    assert files["etc/netroot/export-root"] == b"/srv/export\n"
    # Its own host key, not nfs-01's.
    one_pub = _members(seeds.server_vm_seed(plan, plan.nfs[0], "k"))
    assert one_pub["etc/ssh/ssh_host_ed25519_key.pub"] != files["etc/ssh/ssh_host_ed25519_key.pub"]
    vm = servervm.files_of(tmp_path, two)
    line = " ".join(servervm.qemu_argv(vm, servervm.Artifacts(tmp_path, tmp_path, tmp_path), two))
    assert "ifname=nrsrv1" in line and f"mac={stable_mac('10.77.0.3')}" in line
    assert "-name nfs-02,process=netroot-nfs-02" in line and "systemd.hostname=nfs-02" in line
    assert f"file={tmp_path}/server-vm-nfs-02/disk.qcow2" in line
    assert servervm.name_of(vm.dir) == "nfs-02"
    assert servervm.name_of(servervm.files_of(tmp_path).dir) == "nfs-01"


def test_known_hosts_and_inventory_name_every_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETROOT_HOME", str(tmp_path))
    plan = make_plan(2, tmp_path / "lab", servers=2)
    seeds.write_identity(plan, ["false"])
    lines = plan.known_hosts.read_text().splitlines()
    assert [line.split()[0] for line in lines] == [
        "10.77.0.2,nfs-01",
        "10.77.0.3,nfs-02",
        "10.77.0.11,pi-01",
        "10.77.0.12,pi-02",
    ]
    assert lines[0].split()[2] != lines[1].split()[2]  # a host key each
    inv = yaml.safe_load((tmp_path / "lab" / "inventory.yml").read_text())
    assert list(inv["all"]["children"]["nfs_servers"]["hosts"]) == ["nfs-01", "nfs-02"]
