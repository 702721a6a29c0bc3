"""One image, one version everywhere: exported at different times, here and to two servers (real
Docker, two sshd hosts in network namespaces), every copy has the same tree hash, and each
server's copy, re-hashed from its disk, is checked against it.

Each export makes its own container at its own moment: without netroot.export.image's
CONTAINER_MADE (what Docker makes in a container takes the image's created time) the init
layer's /dev, /proc, /sys, /etc/hosts... would carry each container's creation time, and the
hashes would differ. Each export here runs in a second of its own to make sure they would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from netroot.export.manifest import Manifest, tree_hash
from netroot.export.scan import scan
from tests.integration.export import dockerkit
from tests.integration.provision_hosts import NEEDS_RSYNC, NetnsHost, write_inventory
from tests.unit.export.test_export_repair import flip

pytestmark = [pytest.mark.integration, *NEEDS_RSYNC]
IMAGE = dockerkit.FIDELITY  # has files of every kind, and Docker's init layer on each export


def _next_second() -> None:
    time.sleep(1.05 - time.time() % 1)


class Site:
    """This host's export roots and two servers' (one inventory for each, one for both)."""

    def __init__(self, hosts: dict[str, NetnsHost], tmp: Path) -> None:
        self.tmp = tmp
        self.roots = {name: tmp / f"root-{name}" for name in hosts}
        servers = {
            name: {
                "ansible_host": host.address,
                "netroot_export_remote": True,
                "netroot_export_root": str(self.roots[name]),
                "netroot_nfs_server_lib_dir": str(tmp / f"lib-{name}"),
                **host.inventory_vars(),
            }
            for name, host in hosts.items()
        }
        self.inventories = {
            name: write_inventory(
                tmp / f"{name}.yml",
                {"all": {"children": {"nfs_servers": {"hosts": {name: servers[name]}}}}},
            )
            for name in servers
        }

    def run(self, *args: str, inventory: Path | None = None) -> dict[str, Any]:
        env = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
        env |= {"NETROOT_HOME": str(self.tmp / "home"), "NO_COLOR": "1"}
        inv = ["-i", str(inventory)] if inventory else []
        done = subprocess.run(
            [sys.executable, "-m", "netroot", *inv, *args, "--json"],
            capture_output=True, text=True, env=env, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        out: dict[str, Any] = json.loads(done.stdout)
        return out

    def export_here(self, root: str, *flags: str) -> dict[str, Any]:
        return self.run("export", IMAGE, "--name", "img", "--root", str(self.tmp / root), *flags)

    def export_to(self, server: str) -> dict[str, Any]:
        return self.run("export", IMAGE, "--name", "img", inventory=self.inventories[server])

    def verify_on(self, server: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
        env |= {"NETROOT_HOME": str(self.tmp / "home"), "NO_COLOR": "1"}
        argv = [sys.executable, "-m", "netroot", "-i", str(self.inventories[server])]
        return subprocess.run(
            [*argv, "verify", "img", "--json"], capture_output=True, text=True, env=env,
            timeout=600, check=False,
        )  # fmt: skip


@pytest.fixture
def site(hosts: dict[str, NetnsHost], images: Path, tmp_path: Path) -> Site:
    return Site(hosts, tmp_path)


def test_one_image_at_four_times_here_and_on_two_servers_one_tree_hash(site: Site) -> None:
    runs = []
    exports: list[Callable[[], dict[str, Any]]] = [
        lambda: site.export_here("a"),
        lambda: site.export_here("b", "--stream"),  # the other way of reading it
        lambda: site.export_to("nfs-01"),
        lambda: site.export_to("nfs-02"),
    ]
    for export in exports:
        _next_second()  # each export's container made in a second of its own
        runs.append(export())
    assert len({r["version"] for r in runs}) == 1, [r["version"] for r in runs]
    hashes = [r["tree_hash"] for r in runs]
    assert len(set(hashes)) == 1, hashes
    vid, want = runs[0]["version"], hashes[0]
    # Each server's copy, read from its own disk: the same entries and the same hash.
    trees = {s: site.roots[s] / "img" / "versions" / vid for s in site.roots}
    entries = {s: scan(str(t)) for s, t in trees.items()}
    assert entries["nfs-01"] == entries["nfs-02"]
    for server, tree in trees.items():
        assert tree_hash(entries[server]) == want, server
        manifest = Manifest.from_json(tree.with_name(f"{vid}.json").read_text())
        assert manifest.tree_hash == want and manifest.entries == entries[server]
        verified = site.verify_on(server)
        assert verified.returncode == 0, verified.stderr
        assert json.loads(verified.stdout)["tree_hash"] == want


def test_a_copy_that_differs_on_one_server_is_caught_by_its_hash(site: Site) -> None:
    vid = site.export_to("nfs-01")["version"]
    _next_second()
    assert site.export_to("nfs-02")["version"] == vid
    damaged = site.roots["nfs-02"] / "img" / "versions" / vid / "opt" / "random.bin"
    if not damaged.exists():  # the fidelity image's largest regular file, whatever its name
        tree = damaged.parents[1]
        damaged = max((p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()),
                      key=lambda p: p.stat().st_size)  # fmt: skip
    flip(damaged, 0)
    assert site.verify_on("nfs-01").returncode == 0
    bad = site.verify_on("nfs-02")
    assert bad.returncode == 3, bad.stderr
    copies = {s: tree_hash(scan(str(site.roots[s] / "img" / "versions" / vid))) for s in site.roots}
    assert copies["nfs-01"] != copies["nfs-02"]
