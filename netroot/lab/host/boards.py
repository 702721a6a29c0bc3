"""Boards: qemu-system-arm/-aarch64 processes, one per board, daemonized with a pidfile."""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from pathlib import Path

from netroot.errors import NetrootError
from netroot.lab import supervise
from netroot.lab.arch import DEFAULT, LAB_GPU_MEM_MIB, BoardArch
from netroot.lab.host import monitor, network
from netroot.lab.plan import BoardPlan
from netroot.run import run

MEMORY_MIB = DEFAULT.memory_mib()  # diskless boards are armhf
SNAPSHOT = "netroot-lab"  # the internal qcow2 snapshot holding a board's saved state
QEMU_HINT = "install qemu-system-arm: apt-get install qemu-system-arm"
# What a board does before it lets go of its server (a clean shutdown, or a move to another
# server): network filesystems go first (a server removed with the lab must leave no mounts of
# it in a saved state), and the ARP cache is emptied (a resumed board must ask for the server's
# address, not trust a saved answer). Run as root through sudo, as the board's user `pi` (root
# cannot log in).
QUIESCE = (
    "sudo -n sh -c 'systemctl stop netroot-mount.service 2>/dev/null; "
    "umount -a -l -t overlay,nfs,nfs4 2>/dev/null; ip neigh flush all 2>/dev/null; sync; true'"
)


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
    def monitor_socket(self) -> Path:
        return self.dir / "monitor.sock"

    @property
    def snapshot_marker(self) -> Path:
        return self.dir / "saved-state"

    @property
    def host_key(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"


def kernel_cmdline(board: BoardPlan, prefixlen: int = 24) -> str:
    """The board's kernel command line: serial console, its address for the initramfs."""
    return f"console=ttyAMA0 panic=-1 quiet loglevel=4 netroot.ip={board.address}/{prefixlen}"


# TCG's translation cache per machine (MiB). QEMU's default is 1 GiB of RSS per machine. At 128
# MiB a board filled it about every 10 s of Python and Ansible work (33 flushes in one rollout
# and two smokes, `info jit`), and each flush retranslates the hot code: 512 MiB gave 6 flushes
# and a one-batch rollout of 3 boards 0.63x the time (98 s -> 62 s, same run). The server VM
# runs only the kernel's nfsd and sshd: 128 MiB is plenty there.
BOARD_TB_MIB = 512
SERVER_TB_MIB = 128


def machine_pairs(
    name: str, machine: str, cpu: str, memory_mib: int, tb_mib: int = BOARD_TB_MIB
) -> list[tuple[str, str]]:
    """The qemu options of every lab machine: its name (the process's too), one CPU under TCG."""
    return [
        ("-name", f"{name},process=netroot-{name}"),
        ("-M", machine),
        ("-cpu", cpu),
        ("-smp", "1"),
        ("-m", str(memory_mib)),
        ("-accel", f"tcg,tb-size={tb_mib}"),
    ]


@dataclass(frozen=True)
class Machine:
    """What every disk board of a lab boots: its kernel and initramfs, its arch, and how much
    of its RAM goes to the GPU."""

    kernel: Path
    initrd: Path
    arch: BoardArch = DEFAULT
    gpu_mem: int = LAB_GPU_MEM_MIB

    def memory_mib(self) -> int:
        """The RAM the board's OS sees."""
        return self.arch.memory_mib(self.gpu_mem)


def kernel_pairs(kernel: Path, initrd: Path, cmdline: str) -> list[tuple[str, str]]:
    """A machine that boots its kernel and initramfs directly (no firmware), with `cmdline`."""
    return [("-kernel", str(kernel)), ("-initrd", str(initrd)), ("-append", cmdline)]


def disk_pairs(
    drive: str, file: Path, fmt: str, mode: str, serial: str = ""
) -> list[tuple[str, str]]:
    """One virtio disk named `drive`: `mode` is `discard=unmap` or `readonly=on`; `serial`, when
    the guest finds the disk by one."""
    device = f"virtio-blk-pci,drive={drive}" + (f",serial={serial}" if serial else "")
    return [("-drive", f"if=none,id={drive},file={file},format={fmt},{mode}"), ("-device", device)]


def lan_pairs(tap: str, mac: str, nic: str = "virtio-net-pci") -> list[tuple[str, str]]:
    """The machine's one NIC on its lab tap (the lab made the tap: no up/down scripts); `romfile=`
    empty, or QEMU looks for a network boot ROM (efi-virtio.rom) the machines do not use."""
    return [
        ("-netdev", f"tap,id=lan,ifname={tap},script=no,downscript=no"),
        ("-device", f"{nic},netdev=lan,mac={mac},romfile="),
    ]


def qemu_argv(board: BoardPlan, files: BoardFiles, machine: Machine) -> list[str]:
    """The board's qemu command line (a `virt` machine with the arch's CPU and the RAM its OS
    sees with the machine's `gpu_mem` given to the GPU).

    No `-no-reboot`: a board that reboots (a changed config.txt) is reset by QEMU in the same
    process, so it comes back at the same address on the same disk, and its boot unit mounts its
    version again. A power-off still ends the process.
    """
    pairs = [
        *machine_pairs(board.name, "virt", machine.arch.cpu, machine.memory_mib()),
        *kernel_pairs(machine.kernel, machine.initrd, kernel_cmdline(board)),
        *disk_pairs("sd", files.disk, "qcow2", "discard=unmap"),
        # Read-only, so savevm leaves it alone (raw cannot hold snapshots).
        *disk_pairs("seed", files.seed, "raw", "readonly=on"),
        *lan_pairs(board.tap, board.mac),
        *io_pairs(files),
    ]
    return [machine.arch.qemu, *[x for pair in pairs for x in pair]]


def io_pairs(files: BoardFiles) -> list[tuple[str, str]]:
    """What every lab machine has besides its disk and NIC: an entropy source, the serial
    console (a socket, logged), the monitor socket, no display, the pidfile."""
    console = f"socket,id=console,path={files.console_socket},server=on,wait=off"
    return [
        ("-device", "virtio-rng-pci"),
        ("-chardev", f"{console},logfile={files.console},logappend=on"),
        ("-serial", "chardev:console"),
        ("-monitor", f"unix:{files.monitor_socket},server=on,wait=off"),
        ("-display", "none"),
        ("-pidfile", str(files.pidfile)),
    ]


def fingerprint(argv: list[str], seed: bytes) -> str:
    """What a saved board state depends on: the exact machine and its seed (pure)."""
    return hashlib.sha256("\0".join(argv).encode() + seed).hexdigest()


def resumable(files: BoardFiles, print_: str) -> bool:
    """A saved state exists in the board's disk and was taken of this very machine."""
    if not files.disk.exists() or not files.snapshot_marker.exists():
        return False
    if files.snapshot_marker.read_text().strip() != print_:
        return False
    info = run(["qemu-img", "snapshot", "-l", "-U", files.disk], check=False).stdout.decode()
    return SNAPSHOT in info.split()


def start(board: BoardPlan, files: BoardFiles, machine: Machine) -> bool:
    """Start the board's qemu inside the lab namespace, resuming its saved state if it matches
    (the same machine: a saved state of another RAM size boots anew).

    Returns True if it resumed (seconds) rather than booted (a minute of emulated systemd).
    """
    files.pidfile.unlink(missing_ok=True)
    argv = qemu_argv(board, files, machine)
    print_ = fingerprint(argv, files.seed.read_bytes())
    resume = resumable(files, print_)
    files.snapshot_marker.unlink(missing_ok=True)  # a state is resumed at most once
    if not resume:
        files.console.unlink(missing_ok=True)
    (files.dir / "fingerprint").write_text(print_ + "\n")
    (files.dir / "arch").write_text(machine.arch.name + "\n")
    (files.dir / "memory").write_text(f"{machine.memory_mib()}\n")
    extra = ["-loadvm", SNAPSHOT] if resume else []
    run([*network.qemu_prefix(), *argv, *extra, "-daemonize"], hint=QEMU_HINT)
    pid = supervise.read_pidfile(files.pidfile)
    if pid is None or not supervise.is_ours(pid, str(files.disk)):
        raise NetrootError(f"{board.name}: qemu daemonized but left no live pid")
    return resume


def arch_of(files: BoardFiles) -> str:
    """The arch the board was last started as (boards from before arches were arm64)."""
    try:
        return (files.dir / "arch").read_text().strip()
    except FileNotFoundError:
        return "arm64"


def memory_of(files: BoardFiles) -> int | None:
    """The RAM (MiB) the board was last started with; None if not recorded."""
    try:
        return int((files.dir / "memory").read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def running_pid(files: BoardFiles, marker: str | None = None) -> int | None:
    """The board's qemu PID if that process is alive and is this board's qemu (its command
    line holds `marker`, default: the board's disk)."""
    pid = supervise.read_pidfile(files.pidfile)
    if pid is not None and supervise.is_ours(pid, marker or str(files.disk)):
        return pid
    return None


def suspend(files: BoardFiles) -> bool:
    """Save the running board's state into its own disk (HMP savevm), for a fast next start."""
    if running_pid(files) is None or not files.monitor_socket.exists():
        return False
    try:
        out = monitor.hmp(files.monitor_socket, ["stop", f"savevm {SNAPSHOT}"], timeout=180)
    except (OSError, TimeoutError):
        return False
    if any("rror" in o for o in out):
        return False
    files.snapshot_marker.write_text((files.dir / "fingerprint").read_text())
    return True


def stop(files: BoardFiles, marker: str | None = None) -> bool:
    """Stop the board's qemu by PID (after asking it to quit if its monitor answers); only a
    process whose command line holds `marker` (default: the board's disk) is ours to stop."""
    marker = marker or str(files.disk)
    pid = running_pid(files, marker)
    if pid is None:
        files.pidfile.unlink(missing_ok=True)
        return False
    with contextlib.suppress(OSError, TimeoutError):
        monitor.hmp(files.monitor_socket, ["quit"], timeout=10)
    supervise.stop(pid, marker)
    files.pidfile.unlink(missing_ok=True)
    return True
