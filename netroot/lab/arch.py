"""The lab's two kinds of board, as data (pure): which kernel, which QEMU, what `uname -m` says.

`armhf` is the default and matches a Pi 3B on 32-bit Raspberry Pi OS: Debian's armmp-lpae kernel
on a Cortex-A15 `virt` machine says `armv7l` everywhere (uname, Ansible facts); 512 MiB of RAM.
`arm64` is the 64-bit Raspberry Pi OS case: Debian's arm64 kernel and an arm64 userspace on a
Cortex-A53 (ARMv8.0, as a 3B's) say `aarch64`, with a 3B's RAM: 1024 MiB less the gpu_mem
netroot provisions (the only 64-bit OS a 3B runs torch on). Both use the same initramfs design.
"""

from __future__ import annotations

from dataclasses import dataclass

from netroot.errors import UsageError
from netroot.lab.recipes import BOARD, BOARD_ARM64, Recipe

PI3B_RAM_MIB = 1024
LAB_GPU_MEM_MIB = 128  # netroot_gpu_mem's default (roles/netroot_board): what provision writes


@dataclass(frozen=True)
class BoardArch:
    name: str
    qemu: str
    cpu: str
    kernel: Recipe  # the kernel package plus a static busybox of the same architecture
    machine: str  # what `uname -m` says on the board
    userspace: Recipe  # the boards' own OS (their "SD card")
    memory_mib: int  # the board's RAM as its OS sees it


ARMHF = BoardArch(
    name="armhf",
    qemu="qemu-system-arm",
    cpu="cortex-a15",
    kernel=Recipe("kernel", "armhf", "extract", ("linux-image-armmp-lpae", "busybox-static"), ()),
    machine="armv7l",
    userspace=BOARD,
    memory_mib=512,
)
ARM64 = BoardArch(
    name="arm64",
    qemu="qemu-system-aarch64",
    cpu="cortex-a53",
    kernel=Recipe("kernel", "arm64", "extract", ("linux-image-arm64", "busybox-static"), ()),
    machine="aarch64",
    userspace=BOARD_ARM64,
    memory_mib=PI3B_RAM_MIB - LAB_GPU_MEM_MIB,
)
ARCHES = {a.name: a for a in (ARMHF, ARM64)}
DEFAULT = ARMHF


def by_name(name: str) -> BoardArch:
    """The arch called `name`, or a usage error listing the ones there are."""
    try:
        return ARCHES[name]
    except KeyError:
        raise UsageError(f"--arch {name}: unknown", f"use one of {', '.join(ARCHES)}") from None
