"""The lab's netboot image: the boards' OS tree with the lab machine's kernel in /boot/firmware.

A diskless board's root is the version itself, so the version must bring what a booted root
needs: an init (systemd), sshd, sudo and the imaging user `pi` — the boards' tree as
images/board/customize.sh makes it — plus the modules of the lab's kernel, and in
/boot/firmware the kernel and initramfs that U-Boot loads from the board's TFTP directory
(`vmlinuz`, `initrd.img`: netroot.remote.tree serves them; `vmlinuz` holds the kernel
uncompressed in a U-Boot legacy image, which U-Boot's `pxe boot` runs with bootm). Identity
(hostname, machine-id) comes from cmdline.txt, the SSH host key and authorized_keys from the
lab's seed; none is baked in.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

from netroot.lab.host import disk, images, kernel
from netroot.lab.plan import NETBOOT_EXPORT, NETBOOT_IMAGE
from netroot.paths import project_file
from netroot.run import run

Report = Callable[[str], None]


def image_key(board_tar: Path, kern: kernel.Kernel, initrd: Path) -> str:
    """Changes with the board tree, the kernel, the initramfs and the image's own files."""
    booted = kernel.qemu_image(kern).name
    h = hashlib.sha256(f"{board_tar.name} {kern.version} {booted} {initrd.name}".encode())
    h.update(project_file("images", "board", "customize.sh").read_bytes())
    for f in sorted(project_file("images", "raspbian-netboot").iterdir()):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def build(board_tar: Path, kern: kernel.Kernel, cache: Path, report: Report) -> str:
    """Build (or reuse) the netboot image; returns its tag."""
    initrd = kernel.build_netboot_initramfs(kern, cache)
    key = image_key(board_tar, kern, initrd)
    if images.docker_image_label(NETBOOT_IMAGE) == key:
        return NETBOOT_IMAGE
    tar = cache / f"raspbian-netboot-armhf-{key}.tar"
    if not tar.exists():
        report(f"building the netboot image's tree ({NETBOOT_EXPORT})")
        work = cache / "tmp" / f"{tar.stem}.tree"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            run(["tar", "-x", "-p", "--numeric-owner", "--xattrs", "-f", board_tar, "-C", work])
            run(["sh", project_file("images", "board", "customize.sh"), work, "armhf"])
            disk.install_modules(kern, work)
            firmware = work / "boot" / "firmware"
            # What U-Boot boots: the kernel uncompressed, in a legacy image (bootm), as the
            # disk boards boot it (netroot.lab.host.kernel.qemu_image says why).
            shutil.copy2(kernel.qemu_image(kern), firmware / "vmlinuz")
            shutil.copy2(initrd, firmware / "initrd.img")
            partial = tar.with_suffix(".partial")
            run(["tar", "-c", "--numeric-owner", "--xattrs", "-f", partial, "-C", work, "."])
            partial.rename(tar)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    images.docker_image(NETBOOT_IMAGE, "raspbian-netboot", tar, key, "linux/arm/v7", report)
    return NETBOOT_IMAGE
