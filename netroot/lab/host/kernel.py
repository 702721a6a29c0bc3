"""The boards' kernel and initramfs: Debian's kernel (armhf or arm64), busybox-static, modules."""

from __future__ import annotations

import hashlib
import lzma
import shutil
import struct
import tarfile
from dataclasses import dataclass
from pathlib import Path

from netroot.errors import NetrootError
from netroot.lab import cpio
from netroot.lab.modules import (
    INITRAMFS_MODULES,
    NETBOOT_INITRAMFS_MODULES,
    Resolution,
    parse_show_depends,
)
from netroot.paths import project_file
from netroot.remote import uboot
from netroot.run import run


@dataclass(frozen=True)
class Kernel:
    """An unpacked kernel: the image qemu boots and the modules tree that goes with it."""

    root: Path  # holds boot/, lib/modules/<version>/, bin/busybox
    version: str

    @property
    def image(self) -> Path:
        return self.root / "boot" / f"vmlinuz-{self.version}"

    @property
    def modules_dir(self) -> Path:
        return self.root / "lib" / "modules" / self.version

    @property
    def busybox(self) -> Path:
        return self.root / "bin" / "busybox"


def _wanted(name: str) -> bool:
    name = name.removeprefix("./")
    return name.startswith(("boot/vmlinuz-", "lib/modules/")) or name == "bin/busybox"


def unpack(kernel_tar: Path, dest: Path) -> Kernel:
    """Unpack the kernel, its modules and busybox from the extract tar (cached in `dest`)."""
    done = dest / ".unpacked"
    if not done.exists():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(kernel_tar) as tar:
            members = [m for m in tar.getmembers() if _wanted(m.name)]
            tar.extractall(tmp, members=members, filter="tar")
        versions = sorted(p.name for p in (tmp / "lib" / "modules").iterdir())
        if len(versions) != 1:
            raise NetrootError(f"{kernel_tar}: expected one kernel, found {versions or 'none'}")
        run(["depmod", "-b", tmp, versions[0]], hint="install kmod: apt-get install kmod")
        (tmp / ".unpacked").write_text(versions[0] + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return Kernel(dest, done.read_text().strip())


_ZIMAGE_MAGIC = 0x016F2818  # at offset 0x24 of an arm32 zImage
_XZ_MAGIC = b"\xfd7zXZ\x00"
# Where Debian's armhf decompressor puts the kernel on QEMU's `virt` (RAM at 0x40000000): 2 MiB
# in, plus TEXT_OFFSET (its memblock log: the kernel's page tables at 0x40203000). Loaded at
# 0x40008000 instead, the kernel found its vector page overwritten at its first interrupt.
ARMHF_LOAD = 0x40208000


def _is_zimage(head: bytes) -> bool:
    """Whether `head` (at least a file's first 0x30 bytes) starts an arm32 zImage."""
    return len(head) >= 0x30 and struct.unpack_from("<I", head, 0x24)[0] == _ZIMAGE_MAGIC


def uncompressed(zimage: bytes) -> bytes | None:
    """The kernel an arm32 zImage carries, or None when it is not an XZ-compressed zImage.

    The zImage is a decompressor with the kernel as an XZ stream, followed by the kernel's size
    (4 bytes, little-endian): the stream is the XZ magic whose data decompresses to exactly that
    size (the magic's bytes also occur in the decompressor's own code). Costs one XZ decompression
    of the kernel (about a second for Debian's 5.5 MB armmp-lpae zImage) plus linear scanning.
    """
    if not _is_zimage(zimage):
        return None
    at = zimage.find(_XZ_MAGIC)
    while at >= 0:
        dec = lzma.LZMADecompressor(lzma.FORMAT_XZ)
        try:
            out = dec.decompress(zimage[at:])
        except lzma.LZMAError:
            out = b""
        rest = dec.unused_data
        if dec.eof and len(rest) >= 4 and struct.unpack_from("<I", rest)[0] == len(out):
            return out
        at = zimage.find(_XZ_MAGIC, at + 1)
    return None


def qemu_image(kernel: Kernel) -> Path:
    """What QEMU boots for `kernel`: for an arm32 zImage, its kernel uncompressed in a U-Boot
    legacy image (cached beside it); otherwise (arm64's Image, another compression) the image.

    A zImage decompresses itself over the memory the previous kernel ran from; after a reboot
    (a reset inside the same QEMU process) TCG still holds translations of that memory, and the
    decompressor's stores into it take QEMU's self-modifying-code path: a reboot under TCG was
    seen to stall there for half a minute or more. QEMU writes an uncompressed image into guest
    memory itself, so nothing is left for the guest to decompress (the kernel is the same).
    """
    path = kernel.image.with_name(f"Image-{kernel.version}-{ARMHF_LOAD:x}.uimg")
    if path.exists():
        return path
    with kernel.image.open("rb") as f:  # the header says whether it is a zImage at all
        if not _is_zimage(f.read(0x30)):
            return kernel.image
    plain = uncompressed(kernel.image.read_bytes())
    if plain is None:
        return kernel.image
    data = uboot.legacy_image(
        plain, uboot.TYPE_KERNEL, f"Linux-{kernel.version}", ARMHF_LOAD, ARMHF_LOAD
    )
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.rename(path)
    return path


def resolve(kernel: Kernel, modules: tuple[str, ...]) -> Resolution:
    """The module files (dependencies first) that load `modules` on this kernel."""
    proc = run(
        ["modprobe", "-d", kernel.root, "-S", kernel.version, "--show-depends", "-a", *modules],
        hint="install kmod: apt-get install kmod",
    )
    return parse_show_depends(proc.stdout.decode(), str(kernel.modules_dir))


def initramfs_entries(
    kernel: Kernel,
    init_script: bytes,
    modules: tuple[str, ...] = INITRAMFS_MODULES,
    extra: tuple[cpio.Entry, ...] = (),
) -> list[cpio.Entry]:
    """Everything the board's initramfs holds: busybox, /init, `modules` and `extra` files."""
    resolution = resolve(kernel, modules)
    entries = [
        cpio.directory(d)
        for d in ("bin", "dev", "etc", "proc", "sys", "newroot", "lib", "lib/modules")
    ]
    # The kernel opens /dev/console before /init runs; without it init has no stdio.
    entries.append(cpio.chardev("dev/console", 5, 1))
    entries.append(cpio.file("bin/busybox", kernel.busybox.read_bytes(), 0o755))
    entries.append(cpio.file("init", init_script, 0o755))
    entries.extend(extra)
    order = "".join(f"{Path(f).name}\n" for f in resolution.files)
    entries.append(cpio.file("etc/netroot-modules", order.encode()))
    for rel in resolution.files:
        data = (kernel.modules_dir / rel).read_bytes()
        entries.append(cpio.file(f"lib/modules/{Path(rel).name}", data))
    return entries


def build_initramfs(kernel: Kernel, cache: Path) -> Path:
    """Build (or reuse) the initramfs for `kernel`; named by the hash of its content."""
    init_script = project_file("images", "board", "init").read_bytes()
    key = hashlib.sha256(init_script + kernel.version.encode()).hexdigest()[:12]
    path = cache / f"initramfs-{kernel.version}-{key}.img"
    if not path.exists():
        data = cpio.gzipped(initramfs_entries(kernel, init_script))
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.rename(path)
    return path


def build_netboot_initramfs(kernel: Kernel, cache: Path) -> Path:
    """Build (or reuse) a diskless board's initramfs: DHCP, NFS root, tmpfs overlay."""
    init_script = project_file("images", "board", "netboot-init").read_bytes()
    hook = project_file("images", "board", "udhcpc.script").read_bytes()
    key = hashlib.sha256(
        init_script + hook + kernel.version.encode() + repr(NETBOOT_INITRAMFS_MODULES).encode()
    ).hexdigest()[:12]
    path = cache / f"initramfs-netboot-{kernel.version}-{key}.img"
    if not path.exists():
        extra = (cpio.directory("run"), cpio.file("etc/udhcpc.script", hook, 0o755))
        entries = initramfs_entries(kernel, init_script, NETBOOT_INITRAMFS_MODULES, extra)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(cpio.gzipped(entries))
        tmp.rename(path)
    return path
