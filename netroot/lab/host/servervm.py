"""An NFS server as a machine of its own (`lab up --server kernel`): Debian bookworm amd64 under
QEMU (TCG) with Linux's own nfs-kernel-server, on the lab bridge like a board, reached over SSH
only. One VM per server (nfs-01, nfs-02, ...), each with its own disks and tap.

Three disks: its root (a qcow2 over a cached base, like a board's SD card), its seed (host key,
authorized_keys, address; read-only) and its export disk (ext4, mounted at the export root).
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from netroot.errors import NetrootError
from netroot.lab import supervise
from netroot.lab.host import boards, disk, monitor, network
from netroot.lab.host.boards import BoardFiles
from netroot.lab.plan import LabPlan, ServerPlan, server_plan
from netroot.paths import project_file
from netroot.run import run

QEMU = "qemu-system-x86_64"
QEMU_HINT = "install qemu-system-x86: apt-get install qemu-system-x86"
MEMORY_MIB = 768
ROOT_SIZE = "3G"  # sparse, like the boards' disks
EXPORT_SIZE = "16G"  # sparse: only what the versions use takes space on the host
EXPORT_LABEL = "netroot-export"


@dataclass(frozen=True)
class Artifacts:
    """What the server VM boots: Debian's kernel and initramfs, and its base root disk."""

    kernel: Path
    initrd: Path
    base: Path


@dataclass(frozen=True)
class ServerFiles(BoardFiles):
    """A server VM's files under lab_dir/server-vm[-nfs-0N]/ (a board's, plus its export
    disk)."""

    @property
    def export_disk(self) -> Path:
        return self.dir / "export-remote.img"

    @property
    def mirrored_disk(self) -> Path:
        """The export disk of labs before the remote export root: the control host's export
        root copied by rsync, its writer's lock and fleet state included, which would refuse
        every writer on the server now (they name a holder on the control host)."""
        return self.dir / "export.img"


NFS_01 = server_plan(1, Path("/"), "kernel")  # where a caller names no server


def files_of(lab_dir: Path, srv: ServerPlan = NFS_01) -> ServerFiles:
    return ServerFiles(srv.vm_dir(lab_dir))


def vm_dirs(lab_dir: Path) -> list[Path]:
    """Every server VM directory the lab has (nfs-01's and any other's)."""
    return sorted(p for p in lab_dir.glob("server-vm*") if p.is_dir())


def name_of(vm_dir: Path) -> str:
    """The server a VM directory belongs to (server-vm: nfs-01, server-vm-nfs-02: nfs-02)."""
    return vm_dir.name.removeprefix("server-vm-") if vm_dir.name != "server-vm" else NFS_01.name


def _key(rootfs_tar: Path) -> str:
    h = hashlib.sha256(rootfs_tar.name.encode() + ROOT_SIZE.encode())
    h.update(project_file("images", "server-vm", "customize.sh").read_bytes())
    return h.hexdigest()[:12]


def artifacts_for(rootfs_tar: Path, cache: Path) -> Artifacts:
    """Where the artifacts built from `rootfs_tar` live in `cache` (pure: names only)."""
    stem = cache / f"server-vm-{_key(rootfs_tar)}"
    return Artifacts(
        stem.with_suffix(".vmlinuz"), stem.with_suffix(".initrd"), stem.with_suffix(".img")
    )


def _boot_file(tree: Path, prefix: str) -> Path:
    found = sorted((tree / "boot").glob(f"{prefix}-*"))
    if len(found) != 1:
        raise NetrootError(f"server VM tree: expected one /boot/{prefix}-*, found {len(found)}")
    return found[0]


def build(rootfs_tar: Path, cache: Path) -> Artifacts:
    """Build (or reuse) the server VM's kernel, initramfs and base disk from its tree.

    The kernel and initramfs are the ones Debian's packages installed in the tree (its
    initramfs-tools image loads virtio and ext4); the disk is made with `mke2fs -d`, no mount.
    """
    art = artifacts_for(rootfs_tar, cache)
    if art.base.exists() and art.kernel.exists() and art.initrd.exists():
        return art
    with disk.unpacked(rootfs_tar, cache / "tmp" / f"{art.base.stem}.tree") as work:
        run(["sh", project_file("images", "server-vm", "customize.sh"), work])
        for src, dest in (("vmlinuz", art.kernel), ("initrd.img", art.initrd)):
            tmp = dest.with_suffix(dest.suffix + ".tmp")
            shutil.copyfile(_boot_file(work, src), tmp)
            tmp.rename(dest)
        disk.make_ext4(work, art.base, "netroot-root", ROOT_SIZE)
    return art


def kernel_cmdline(srv: ServerPlan = NFS_01) -> str:
    """Root on the first virtio disk; eth0 (the name the server role's dnsmasq settings use);
    its name (systemd sets it before any unit: the base disk says nfs-01)."""
    return (
        "root=/dev/vda rw console=ttyS0 panic=-1 quiet loglevel=4 net.ifnames=0"
        f" systemd.hostname={srv.name}"
    )


def qemu_argv(files: ServerFiles, art: Artifacts, srv: ServerPlan = NFS_01) -> list[str]:
    """The server's qemu command line: x86_64 under TCG (KVM guests hang after SeaBIOS here).

    The disks carry serials: the seed unit in the VM finds its seed and export disks by them.
    """
    pairs = [
        *boards.machine_pairs(srv.name, "q35", "qemu64", MEMORY_MIB, boards.SERVER_TB_MIB),
        *boards.kernel_pairs(art.kernel, art.initrd, kernel_cmdline(srv)),
        *boards.disk_pairs("root", files.disk, "qcow2", "discard=unmap", "netroot-root"),
        *boards.disk_pairs("seed", files.seed, "raw", "readonly=on", "netroot-seed"),
        *boards.disk_pairs("export", files.export_disk, "raw", "discard=unmap", "netroot-export"),
        *boards.lan_pairs(srv.tap, srv.mac),
        *boards.io_pairs(files),
    ]
    return [QEMU, *[x for pair in pairs for x in pair]]


def prepare_disks(files: ServerFiles, art: Artifacts, fresh: bool) -> None:
    """The server's root (a qcow2 over the base) and its export disk (made once, kept)."""
    files.dir.mkdir(parents=True, exist_ok=True)
    disk.overlay(art.base, files.disk, fresh)
    files.mirrored_disk.unlink(missing_ok=True)  # only copies: the control host has the versions
    if fresh:
        files.export_disk.unlink(missing_ok=True)
    if not files.export_disk.exists():
        tmp = files.export_disk.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", EXPORT_LABEL, tmp, EXPORT_SIZE])
        tmp.rename(files.export_disk)


def start(plan: LabPlan, srv: ServerPlan, seed: bytes, art: Artifacts, fresh: bool) -> int:
    """Boot server `srv`'s VM inside the lab namespace on its own tap; returns qemu's PID."""
    files = files_of(plan.lab_dir, srv)
    stop(files)
    prepare_disks(files, art, fresh)
    files.seed.write_bytes(seed)
    files.console.unlink(missing_ok=True)
    if not network.tap_exists(srv.tap):
        network.add_tap(srv.tap)
    run([*network.qemu_prefix(), *qemu_argv(files, art, srv), "-daemonize"], hint=QEMU_HINT)
    pid = boards.running_pid(files)
    if pid is None:
        raise NetrootError(f"{srv.name}: qemu daemonized but left no live pid")
    return pid


def running_pid(lab_dir: Path, srv: ServerPlan = NFS_01) -> int | None:
    """qemu's PID if the server VM `srv` of this lab runs (checked by its root disk's path)."""
    return boards.running_pid(files_of(lab_dir, srv))


def stop(files: ServerFiles, grace: float = 60.0) -> bool:
    """Shut a server VM down cleanly (ACPI power button: systemd unmounts the export disk),
    then stop it by PID if it is still there after `grace` seconds; True if it was running."""
    pid = boards.running_pid(files)
    if pid is None:
        files.pidfile.unlink(missing_ok=True)
        return False
    try:
        monitor.hmp(files.monitor_socket, ["system_powerdown"], timeout=10)
    except (OSError, TimeoutError):
        grace = 0
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and supervise.is_ours(pid, str(files.disk)):
        time.sleep(0.5)
    return boards.stop(files) or True
