"""The lab's two kinds of board, as data (pure): which kernel, which QEMU, what `uname -m` says.

`armhf` is the default and matches a Pi 3B on 32-bit Raspberry Pi OS: Debian's armmp-lpae kernel
on a Cortex-A15 `virt` machine says `armv7l` everywhere (uname, Ansible facts); 512 MiB of RAM
(a smaller stand-in: it runs no torch). `arm64` is the 64-bit Raspberry Pi OS case: Debian's
arm64 kernel and an arm64 userspace on a Cortex-A53 (ARMv8.0, as a 3B's) say `aarch64`, with a
3B's RAM: 1024 MiB less the board's gpu_mem (the firmware keeps that share for the GPU), the
value the lab writes into its inventory and provision into the board's config.txt (the only
64-bit OS a 3B runs torch on). Both use the same initramfs design.
"""

from __future__ import annotations

from dataclasses import dataclass

from netroot.errors import UsageError
from netroot.lab.recipes import BOARD, BOARD_ARM64, Recipe, kernel

PI3B_RAM_MIB = 1024
LAB_GPU_MEM_MIB = 128  # netroot_gpu_mem's default (roles/netroot_board)
GPU_MEM_RANGE = (32, 944)  # what roles/netroot_board accepts (16 disables the 3D block)


@dataclass(frozen=True)
class BoardArch:
    name: str
    qemu: str
    cpu: str
    kernel: Recipe  # the kernel package plus a static busybox of the same architecture
    machine: str  # what `uname -m` says on the board
    userspace: Recipe  # the boards' own OS (their "SD card")
    ram_mib: int  # the board's RAM
    less_gpu_mem: bool  # the OS sees ram_mib less gpu_mem, as on a 3B

    def memory_mib(self, gpu_mem: int = LAB_GPU_MEM_MIB) -> int:
        """The RAM the board's OS sees with `gpu_mem` MiB given to the GPU."""
        return self.ram_mib - gpu_mem if self.less_gpu_mem else self.ram_mib


# A line each for what QEMU emulates, the OS the board boots (and what it says it is), its RAM.
ARMHF = BoardArch(
    name="armhf", qemu="qemu-system-arm", cpu="cortex-a15",
    kernel=kernel("armhf", "linux-image-armmp-lpae"), userspace=BOARD, machine="armv7l",
    ram_mib=512, less_gpu_mem=False,
)  # fmt: skip
ARM64 = BoardArch(
    name="arm64", qemu="qemu-system-aarch64", cpu="cortex-a53",
    kernel=kernel("arm64", "linux-image-arm64"), userspace=BOARD_ARM64, machine="aarch64",
    ram_mib=PI3B_RAM_MIB, less_gpu_mem=True,
)  # fmt: skip
ARCHES = {a.name: a for a in (ARMHF, ARM64)}
DEFAULT = ARMHF


def by_name(name: str) -> BoardArch:
    """The arch called `name`, or a usage error listing the ones there are."""
    try:
        return ARCHES[name]
    except KeyError:
        raise UsageError(f"--arch {name}: unknown", f"use one of {', '.join(ARCHES)}") from None
