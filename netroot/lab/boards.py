"""Boards: qemu-system-aarch64 processes, one per board, daemonized with a pidfile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from netroot.errors import NetrootError
from netroot.lab import network, supervise
from netroot.lab.plan import BoardPlan
from netroot.run import run

MEMORY_MIB = 512
QEMU_HINT = "install qemu-system-arm: apt-get install qemu-system-arm"


@dataclass(frozen=True)
class BoardFiles:
    """A board's files under lab_dir/boards/<name>/."""

    dir: Path

    @property
    def disk(self) -> Path:
        return self.dir / "disk.qcow2"

    @property
    def seed(self) -> Path:
        return self.dir / "seed.tar"

    @property
    def pidfile(self) -> Path:
        return self.dir / "qemu.pid"

    @property
    def console(self) -> Path:
        return self.dir / "console.log"

    @property
    def console_socket(self) -> Path:
        return self.dir / "console.sock"

    @property
    def host_key(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"


def kernel_cmdline(board: BoardPlan, prefixlen: int = 24) -> str:
    """The board's kernel command line: serial console, its address for the initramfs."""
    return f"console=ttyAMA0 panic=-1 quiet loglevel=4 netroot.ip={board.address}/{prefixlen}"


def qemu_argv(board: BoardPlan, files: BoardFiles, kernel: Path, initrd: Path) -> list[str]:
    """The board's qemu command line (a Pi 3B's Cortex-A53 on the `virt` machine)."""
    return [
        "qemu-system-aarch64",
        "-name",
        f"{board.name},process=netroot-{board.name}",
        "-M",
        "virt",
        "-cpu",
        "cortex-a53",
        "-smp",
        "1",
        "-m",
        str(MEMORY_MIB),
        "-accel",
        "tcg,tb-size=128",
        "-kernel",
        str(kernel),
        "-initrd",
        str(initrd),
        "-append",
        kernel_cmdline(board),
        "-drive",
        f"if=none,id=sd,file={files.disk},format=qcow2,discard=unmap",
        "-device",
        "virtio-blk-pci,drive=sd",
        "-drive",
        f"if=none,id=seed,file={files.seed},format=raw,readonly=on",
        "-device",
        "virtio-blk-pci,drive=seed",
        "-netdev",
        f"tap,id=lan,ifname={board.tap},script=no,downscript=no",
        "-device",
        f"virtio-net-pci,netdev=lan,mac={board.mac},romfile=",
        "-device",
        "virtio-rng-pci",
        "-chardev",
        f"socket,id=console,path={files.console_socket},server=on,wait=off,logfile={files.console}",
        "-serial",
        "chardev:console",
        "-display",
        "none",
        "-monitor",
        "none",
        "-no-reboot",
        "-daemonize",
        "-pidfile",
        str(files.pidfile),
    ]


def start(board: BoardPlan, files: BoardFiles, kernel: Path, initrd: Path) -> int:
    """Start the board's qemu inside the lab namespace; returns its PID once daemonized."""
    files.pidfile.unlink(missing_ok=True)
    files.console.unlink(missing_ok=True)
    argv = [*network.qemu_prefix(), *qemu_argv(board, files, kernel, initrd)]
    run(argv, hint=QEMU_HINT)
    pid = supervise.read_pidfile(files.pidfile)
    if pid is None or not supervise.is_ours(pid, str(files.disk)):
        raise NetrootError(f"{board.name}: qemu daemonized but left no live pid")
    return pid


def running_pid(files: BoardFiles) -> int | None:
    """The board's qemu PID if that process is alive and is this board's qemu."""
    pid = supervise.read_pidfile(files.pidfile)
    if pid is not None and supervise.is_ours(pid, str(files.disk)):
        return pid
    return None


def stop(files: BoardFiles) -> bool:
    pid = supervise.read_pidfile(files.pidfile)
    stopped = pid is not None and supervise.stop(pid, str(files.disk))
    files.pidfile.unlink(missing_ok=True)
    return stopped
