"""What U-Boot reads when it network-boots a lab board (pure, standard library only).

Debian's u-boot-qemu (qemu_arm, 2023.01) boots a disk-less `virt` machine through its `dhcp`
boot target: it takes an address by DHCP, fetches `boot.scr.uimg` from the TFTP root and runs
it. netroot's script asks DHCP again, for the board's own boot file (dnsmasq names
`<serial>/pxelinux.0`, which need not exist: U-Boot takes its directory as the prefix of every
PXE path), then runs `pxe get` + `pxe boot`, which read `<serial>/pxelinux.cfg/01-<mac>`
(`default` for a board whose MAC is not known) — the board's directory, switched atomically
like a Pi's (netroot.remote.tree).
"""

from __future__ import annotations

import struct
import zlib

BOOT_SCRIPT = "boot.scr.uimg"  # U-Boot's `boot_script_dhcp`, fetched from the TFTP root
PXE_CONFIG = "pxelinux.cfg/default"
PXE_BOOTFILE = "pxelinux.0"  # only its directory matters to U-Boot's `pxe`

# kernel_addr_r: where `pxe boot` fetches the kernel. qemu_arm's default (0x40400000) lies under
# where the lab's kernel image (an uncompressed kernel in a legacy image, netroot.lab.host.kernel)
# is copied to run, 0x40208000 on; bootm refuses an image it would overwrite. 0x42000000 leaves
# almost 30 MiB below it for the kernel and 32 MiB above it before the initramfs (ramdisk_addr_r).
SCRIPT = """\
echo netroot: asking DHCP for the boot directory of this board
setenv autoload no
setenv kernel_addr_r 0x42000000
dhcp
pxe get
pxe boot
echo netroot: PXE boot failed, resetting in 5 s
sleep 5
reset
"""

_MAGIC = 0x27051956
_OS_LINUX, _ARCH_ARM, _COMP_NONE = 5, 2, 0
TYPE_KERNEL, TYPE_SCRIPT = 2, 6  # the image types netroot writes
_HEADER = struct.Struct(">IIIIIIIBBBB32s")


def legacy_image(data: bytes, image_type: int, name: str, load: int = 0, entry: int = 0) -> bytes:
    """`data` in a legacy U-Boot image (what `mkimage -A arm -O linux -C none` writes).

    The header's time stamp is 0, so the same data is the same bytes (a rerun changes nothing).
    """
    header = _HEADER.pack(
        _MAGIC,
        0,
        0,
        len(data),
        load,
        entry,
        zlib.crc32(data),
        _OS_LINUX,
        _ARCH_ARM,
        image_type,
        _COMP_NONE,
        name.encode()[:32],
    )
    hcrc = zlib.crc32(header)
    return header[:4] + struct.pack(">I", hcrc) + header[8:] + data


def script_image(text: str = SCRIPT, name: str = "netroot netboot") -> bytes:
    """`text` as a legacy U-Boot script image, what `mkimage -T script -C none` writes."""
    body = text.encode()
    data = struct.pack(">II", len(body), 0) + body  # multi-file layout: sizes, 0, the files
    return legacy_image(data, TYPE_SCRIPT, name)


def pxe_config_name(mac: str) -> str:
    """Where the board's PXE config goes: `pxe get` tries pxelinux.cfg/01-<mac> first, then
    ten more names (each a TFTP round trip, about 1.5 s under emulation) before `default`."""
    if not mac:
        return PXE_CONFIG
    return "pxelinux.cfg/01-" + mac.lower().replace(":", "-")


def pxe_config(kernel: str, initrd: str | None, cmdline: str) -> str:
    """A pxelinux.cfg that boots `kernel` (paths relative to the board's directory)."""
    lines = ["default netroot", "label netroot", f"  kernel {kernel}"]
    if initrd:
        lines.append(f"  initrd {initrd}")
    lines.append(f"  append {cmdline.strip()}")
    return "\n".join(lines) + "\n"
