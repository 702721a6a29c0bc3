"""Kernel module resolution for the boards' initramfs (pure: parses `modprobe --show-depends`)."""

from __future__ import annotations

from dataclasses import dataclass

# What the initramfs needs to reach the board's own root disk and give it its address;
# everything else (nfs, nfsv4, overlay) is loaded on demand by the board's own OS.
INITRAMFS_MODULES = ("virtio_pci", "virtio_blk", "ext4", "virtio_net")

# A diskless board's initramfs (images/board/netboot-init): its NIC (e1000: U-Boot's virtio-net
# driver reads a wrong MAC on this QEMU, so the diskless boards have an e1000 for both), the
# NFS v3 client for its root, and overlayfs for the tmpfs over it.
NETBOOT_INITRAMFS_MODULES = ("e1000", "nfsv3", "overlay")

# Modules the board OS must be able to load (checked when the disk is built).
BOARD_MODULES = ("virtio_net", "nfs", "nfsv4", "nfsv3", "overlay", "ext4", "virtio_blk")


@dataclass(frozen=True)
class Resolution:
    """Module files to insmod, in dependency order, plus the names that are built in."""

    files: tuple[str, ...]  # paths relative to /lib/modules/<version>/
    builtin: tuple[str, ...]


def parse_show_depends(text: str, modules_dir: str) -> Resolution:
    """Parse `modprobe -d ROOT -S VER --show-depends M...` output.

    Lines look like `insmod /ROOT/lib/modules/VER/kernel/fs/ext4/ext4.ko` or `builtin crc32c`.
    Files come out relative to `modules_dir` (ROOT/lib/modules/VER), deduplicated in first-seen
    order, which modprobe guarantees is dependencies first.
    """
    prefix = modules_dir.rstrip("/") + "/"
    files: list[str] = []
    builtin: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        word, _, rest = line.partition(" ")
        if word == "builtin":
            name = rest.strip()
            if name and name not in builtin:
                builtin.append(name)
        elif word == "insmod":
            path = rest.split()[0] if rest.split() else ""
            if not path.startswith(prefix):
                raise ValueError(f"modprobe named a module outside {prefix}: {path!r}")
            rel = path[len(prefix) :]
            if rel not in files:
                files.append(rel)
        else:
            raise ValueError(f"unexpected modprobe --show-depends line: {line!r}")
    return Resolution(tuple(files), tuple(builtin))
