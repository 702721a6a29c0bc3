"""`status`'s boot-stage request over real SSH: a real sshd in a network namespace is the NFS
server (tests/integration/provision_hosts.py; the namespace shares this machine's files, so
the server's dnsmasq log is a file the test writes). What the server's program reads there,
and a server that refuses the login (a host key not in known_hosts, a key it does not take)
said as netroot's other helpers on the server say it (netroot.adapters.serverssh)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netroot.inventory import Inventory, load
from netroot.netboot.bootstage import boot_steps
from netroot.netboot.bootstep import BootStep
from tests.integration.provision_hosts import NEEDS_HOSTS, NetnsHost, netns_host, write_inventory
from tests.unit.netboot.test_bootstage import LOG

pytestmark = NEEDS_HOSTS

HINT = "(check the server's address, key and known_hosts in the inventory)"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("srv")) as h:
        yield h


def _inventory(tmp_path: Path, host: NetnsHost, **server: Any) -> Inventory:
    (tmp_path / "dnsmasq.log").write_text(LOG)
    nfs = {"ansible_host": host.address, **host.inventory_vars(),
           "netroot_export_root": str(tmp_path / "root"),
           "netroot_nfs_server_dnsmasq_log": str(tmp_path / "dnsmasq.log"), **server}  # fmt: skip
    board = {"ansible_host": "127.0.0.11", "ansible_port": 1, "netroot_address": "10.88.0.11",
             "netroot_boot": "netboot", "netroot_mac": "b8:27:eb:00:00:01",
             "netroot_serial": "1a2b3c01"}  # fmt: skip
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": nfs}},
                                 "boards": {"hosts": {"pi-01": board}}}}}  # fmt: skip
    return load(write_inventory(tmp_path / "inventory.yml", data))


def test_the_servers_program_reads_its_log_over_ssh(tmp_path: Path, host: NetnsHost) -> None:
    inv = _inventory(tmp_path, host)
    step = boot_steps(inv, [inv.boards["pi-01"]])["pi-01"]
    assert isinstance(step, BootStep), step
    assert (step.event, step.detail, step.nfs) == ("tftp-sent", "1a2b3c01/vmlinuz", False)


def test_an_unknown_host_key_is_said_as_the_other_helpers_say_it(
    tmp_path: Path, host: NetnsHost
) -> None:
    (tmp_path / "known_hosts").write_text("")
    inv = _inventory(tmp_path, host, netroot_known_hosts=str(tmp_path / "known_hosts"))
    said = boot_steps(inv, [inv.boards["pi-01"]])["pi-01"]
    assert isinstance(said, str)
    assert said.startswith(f"nfs-01: ssh root@{host.address}:22 failed: No ED25519 host key is ")
    assert said.endswith(HINT) and "\n" not in said, said


def test_a_key_the_server_refuses_is_said_as_the_other_helpers_say_it(
    tmp_path: Path, host: NetnsHost
) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    inv = _inventory(tmp_path, host, ansible_ssh_private_key_file=str(other))
    said = boot_steps(inv, [inv.boards["pi-01"]])["pi-01"]
    assert isinstance(said, str)
    assert said.startswith(f"nfs-01: ssh root@{host.address}:22 failed: ")
    assert f"root@{host.address}: Permission denied (publickey" in said, said
    assert said.endswith(HINT) and "\n" not in said, said
