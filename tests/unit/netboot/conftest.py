"""A netboot inventory and version trees with Raspberry Pi firmware files in them."""

from __future__ import annotations

from pathlib import Path

import pytest

from netroot.inventory import Inventory, load

INVENTORY = """all:
  children:
    nfs_servers:
      hosts:
        nfs-01: {ansible_host: 10.88.0.1, netroot_export_root: /srv/netroot,
                 netroot_nfs_backend: ganesha}
    boards:
      hosts:
        pi-01: {ansible_host: 10.88.0.11, netroot_address: 10.88.0.11, netroot_boot: netboot,
                netroot_mac: "B8:27:EB:00:00:01", netroot_serial: 1a2b3c01}
        pi-02: {ansible_host: 10.88.0.12, netroot_address: 10.88.0.12, netroot_boot: netboot,
                netroot_mac: "b8:27:eb:00:00:02", netroot_serial: 1a2b3c02}
        pi-03: {ansible_host: 10.88.0.13, netroot_address: 10.88.0.13}
"""


@pytest.fixture
def inventory(tmp_path: Path) -> Inventory:
    path = tmp_path / "inventory.yml"
    path.write_text(INVENTORY)
    return load(path)


def make_version(root: Path, version: str, boot: str = "boot/firmware") -> Path:
    """A version root whose boot directory holds a 3B's firmware files (contents name them)."""
    base = root / version / boot
    for rel in ("bootcode.bin", "start.elf", "fixup.dat", "config.txt", "kernel7.img",
                "bcm2710-rpi-3-b.dtb", "overlays/vc4-kms-v3d.dtbo", "cmdline.txt"):  # fmt: skip
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{version}:{rel}\n")
    return root / version
