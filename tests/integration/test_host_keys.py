"""Host keys are checked, never auto-accepted: by Ansible (through ansible-runner, which turns
checking off unless told) and by netroot's own SSH (the same OpenSSH), against a real sshd."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from netroot.adapters.ssh import Session, Unreachable
from netroot.errors import Exit
from netroot.inventory import load
from netroot.provision.apply import provision
from netroot.sshtarget import SshTarget
from tests.integration.provision_hosts import (
    NEEDS_HOSTS,
    NetnsHost,
    make_export_tree,
    netns_host,
    write_inventory,
)

pytestmark = NEEDS_HOSTS


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("keys")) as h:
        yield h


def _other_key(tmp: Path) -> tuple[str, str]:
    """Somebody else's host key: (algorithm, base64)."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "other")], check=True
    )
    algo, key = (tmp / "other.pub").read_text().split()[:2]
    return algo, key


def _known_hosts(host: NetnsHost, tmp: Path, kind: str) -> Path:
    path = tmp / f"known_hosts.{kind}"
    if kind == "empty":
        path.write_text("")
    else:
        algo, key = _other_key(tmp)
        path.write_text(f"{host.address} {algo} {key}\n")
    return path


@pytest.mark.parametrize("kind", ["empty", "wrong"])
def test_own_ssh_refuses_unknown_or_wrong_key(host: NetnsHost, tmp_path: Path, kind: str) -> None:
    good = SshTarget("t", host.address, 22, "root", str(host.key), str(host.known_hosts))
    with Session(good) as session:
        assert session.run("echo ok").stdout == b"ok\n"
    bad = SshTarget(
        "t", host.address, 22, "root", str(host.key), str(_known_hosts(host, tmp_path, kind))
    )
    with pytest.raises(Unreachable) as err, Session(bad) as session:
        session.run("true")
    assert err.value.code == Exit.UNREACHABLE
    said = {"empty": "host key is known for", "wrong": "has changed"}[kind]
    message = err.value.message
    assert said in message and "known_hosts" in message and "\n" not in message, message


@pytest.mark.parametrize("kind", ["empty", "wrong"])
def test_ansible_refuses_unknown_or_wrong_key(host: NetnsHost, tmp_path: Path, kind: str) -> None:
    root = tmp_path / "export"
    make_export_tree(root, "img", "c3" * 6)
    known = _known_hosts(host, tmp_path, kind)
    hostvars = dict(host.inventory_vars())
    hostvars["ansible_ssh_common_args"] = (
        f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes -o ConnectTimeout=5"
    )
    data = {
        "all": {
            "vars": hostvars,
            "children": {
                "nfs_servers": {
                    "hosts": {
                        "nfs-k": {
                            "ansible_host": host.address,
                            "netroot_export_root": str(root),
                            "netroot_nfs_backend": "kernel",
                            "netroot_nfs_server_exports_file": str(tmp_path / "exports"),
                            "netroot_nfs_server_manage_service": False,
                            "netroot_nfs_server_bin_dir": str(tmp_path / "bin"),
                            "netroot_nfs_server_install_packages": False,
                            "netroot_nfs_server_nfsd_conf": str(tmp_path / "netroot.conf"),
                        }
                    }
                },
                "boards": {"hosts": {}},
            },
        }
    }
    inventory = write_inventory(tmp_path / "inventory.yml", data)
    result = provision(load(inventory), [], all_hosts=True)
    assert result.summary.hosts["nfs-k"].state == "unreachable", result.as_dict()
    assert not (tmp_path / "exports").exists()  # nothing was done on a host we could not trust
