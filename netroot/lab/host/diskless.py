"""Diskless boards: a QEMU `virt` machine with no disk at all, booted by U-Boot over the network.

Debian's u-boot-qemu is the firmware (`-bios`): at power-on it asks DHCP for an address, runs
the lab server's `boot.scr.uimg` and PXE-boots the kernel, initramfs and command line from the
board's TFTP directory (netroot.remote.uboot). Its NIC is an e1000: U-Boot 2023.01's virtio-net
driver sends DHCP from a wrong MAC (52:52:52:52:52:52) on this QEMU, which dnsmasq, answering
the inventory's MACs only, ignores. A reboot resets the machine in the same process (no
`-no-reboot`), so a `systemctl reboot` on the board is a network boot again; power-cycling is
stopping and starting the process (`netroot lab power-cycle NAME`).
"""

from __future__ import annotations

from pathlib import Path

from netroot.errors import EnvironmentMissing, NetrootError
from netroot.lab.host import boards, network
from netroot.lab.host.boards import MEMORY_MIB, QEMU_HINT, BoardFiles
from netroot.lab.plan import BoardPlan
from netroot.run import run

UBOOT = Path("/usr/lib/u-boot/qemu_arm/u-boot.bin")
UBOOT_HINT = "install Debian's U-Boot for QEMU: apt-get install u-boot-qemu"


def qemu_argv(board: BoardPlan, files: BoardFiles, firmware: Path = UBOOT) -> list[str]:
    """The diskless board's qemu command line (pure): firmware, NIC, console; no drive."""
    pairs = [
        *boards.machine_pairs(board.name, "virt", "cortex-a15", MEMORY_MIB),
        ("-bios", str(firmware)),
        *boards.lan_pairs(board.tap, board.mac, "e1000"),
        *boards.io_pairs(files),
    ]
    return ["qemu-system-arm", *[x for pair in pairs for x in pair]]


def running_pid(files: BoardFiles) -> int | None:
    """The board's qemu PID if that process is alive and is this board's qemu (no disk: its
    pidfile names it)."""
    return boards.running_pid(files, marker=str(files.pidfile))


def start(board: BoardPlan, files: BoardFiles, firmware: Path = UBOOT) -> int:
    """Power the board on inside the lab namespace; returns its qemu PID."""
    if not firmware.is_file():
        raise EnvironmentMissing(f"{firmware}: no U-Boot for QEMU's virt machine", UBOOT_HINT)
    files.dir.mkdir(parents=True, exist_ok=True)
    files.pidfile.unlink(missing_ok=True)
    files.console.unlink(missing_ok=True)
    (files.dir / "arch").write_text("armhf\n")
    argv = qemu_argv(board, files, firmware)
    run([*network.qemu_prefix(), *argv, "-daemonize"], hint=QEMU_HINT)
    pid = running_pid(files)
    if pid is None:
        raise NetrootError(f"{board.name}: qemu daemonized but left no live pid")
    return pid


def stop(files: BoardFiles) -> bool:
    """Power the board off (its RAM, the tmpfs overlay included, is gone: as on a real one)."""
    return boards.stop(files, marker=str(files.pidfile))


def power_cycle(board: BoardPlan, files: BoardFiles) -> int:
    """Off (if on), then on: what a switched PDU or uhubctl does to a real board."""
    stop(files)
    return start(board, files)
