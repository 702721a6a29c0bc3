"""Two NFS servers through the real ansible-runner, each a real sshd host (a netns): each
server's /etc/exports block lists only its own boards; a run for one server's boards never
touches the other server; with one server down the other completes.

Kernel backend, validated by the role's checker, not applied (this kernel has no nfsd).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netroot.errors import Exit
from netroot.inventory import load
from netroot.provision.apply import provision
from tests.integration.provision_hosts import (
    NEEDS_HOSTS,
    NetnsHost,
    make_export_tree,
    start_sshd,
    stop_sshd,
    write_inventory,
)

pytestmark = NEEDS_HOSTS
VERSION = "c3" * 6


def _inventory(hosts: dict[str, NetnsHost], tmp: Path) -> Path:
    servers: dict[str, Any] = {}
    for name, host in hosts.items():
        root = tmp / name / "export"
        make_export_tree(root, "img", VERSION)
        (tmp / name / "bin").mkdir()
        servers[name] = {
            "ansible_host": host.address,
            "netroot_nfs_backend": "kernel",
            "netroot_export_root": str(root),
            "netroot_nfs_server_exports_file": str(tmp / name / "exports"),
            "netroot_nfs_server_manage_service": False,
            "netroot_nfs_server_bin_dir": str(tmp / name / "bin"),
            "netroot_nfs_server_install_packages": False,
            "netroot_nfs_server_state_file": str(tmp / name / "nfs-server.state"),
            **host.inventory_vars(),
        }
    # Boards that are down (nothing listens at the spare address): only the servers run.
    boards = {
        f"pi-{i}": {"ansible_host": hosts[server].spare, "netroot_image": "img",
                    "netroot_address": f"192.0.2.{10 + i}", "netroot_nfs_server": server}
        for i, server in enumerate(["nfs-01", "nfs-01", "nfs-02"], start=1)
    }  # fmt: skip
    data = {"all": {"children": {"nfs_servers": {"hosts": servers}, "boards": {"hosts": boards}}}}
    return write_inventory(tmp / "inventory.yml", data)


def _block(tmp: Path, server: str) -> str:
    return (tmp / server / "exports").read_text()


def test_each_server_exports_only_its_own_boards(
    hosts: dict[str, NetnsHost], tmp_path: Path
) -> None:
    inventory = _inventory(hosts, tmp_path)
    result = provision(load(inventory), ["nfs_servers"])
    assert result.exit_code == Exit.OK, result.as_dict()
    one, two = _block(tmp_path, "nfs-01"), _block(tmp_path, "nfs-02")
    assert "192.0.2.11(ro," in one and "192.0.2.12(ro," in one and "192.0.2.13" not in one
    assert "192.0.2.13(ro," in two and "192.0.2.11" not in two and "192.0.2.12" not in two
    assert f"{tmp_path}/nfs-02/export/img 192.0.2.13(" in two


def test_a_run_for_one_servers_boards_leaves_the_other_alone(
    hosts: dict[str, NetnsHost], tmp_path: Path
) -> None:
    inventory = _inventory(hosts, tmp_path)
    stop_sshd(hosts["nfs-02"])  # down: a run that touched it would find it unreachable
    try:
        result = provision(load(inventory), ["pi-1", "pi-2"])
    finally:
        start_sshd(hosts["nfs-02"])
    assert result.plan.servers == ("nfs-01",)
    assert result.summary.hosts["nfs-01"].state in ("ok", "changed"), result.as_dict()
    assert "nfs-02" not in result.summary.hosts
    assert {h for h, s in result.summary.hosts.items() if s.state == "unreachable"} == {
        "pi-1", "pi-2"}  # fmt: skip
    assert "192.0.2.11(ro," in _block(tmp_path, "nfs-01")
    assert not (tmp_path / "nfs-02" / "exports").exists()


def test_with_one_server_down_the_other_completes(
    hosts: dict[str, NetnsHost], tmp_path: Path
) -> None:
    inventory = _inventory(hosts, tmp_path)
    stop_sshd(hosts["nfs-02"])
    try:
        result = provision(load(inventory), ["nfs_servers"])
    finally:
        start_sshd(hosts["nfs-02"])
    assert result.summary.hosts["nfs-02"].state == "unreachable", result.as_dict()
    assert result.summary.hosts["nfs-01"].state in ("ok", "changed")
    assert result.exit_code == Exit.UNREACHABLE
    assert "192.0.2.11(ro," in _block(tmp_path, "nfs-01")
