"""The boards' "SD cards": one cached base disk, a copy-on-write overlay and a seed per board."""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from netroot.lab.host.kernel import Kernel, resolve
from netroot.lab.modules import BOARD_MODULES
from netroot.paths import project_file
from netroot.run import run

# The board OS gets every filesystem module (mounted on demand, never coldplugged) plus the
# modules below with their dependencies. Not the whole tree: udev's coldplug would load
# hundreds of drivers (wireless, sound, ...) and that costs a minute of boot under TCG.
MODULE_TREES = ("fs",)
DRIVER_MODULES = (
    *BOARD_MODULES,
    "virtio_rng",
    "virtio_console",
    "tun",
    "veth",
    "bridge",
    "loop",
    "rpcsec_gss_krb5",
    "af_packet_diag",
    "unix_diag",
)
DISK_SIZE = "4G"  # sparse: only what is written takes space


def base_key(rootfs_tar: Path, kernel: Kernel, arch: str) -> str:
    """Cache key of the base disk: the rootfs recipe, the kernel, arch and the customize script."""
    h = hashlib.sha256()
    h.update(rootfs_tar.name.encode())
    h.update(kernel.version.encode() + arch.encode())
    h.update(project_file("images", "board", "customize.sh").read_bytes())
    h.update(repr((MODULE_TREES, DRIVER_MODULES, DISK_SIZE)).encode())
    return h.hexdigest()[:12]


def install_modules(kernel: Kernel, tree: Path) -> None:
    """Copy the kernel's module subset into the board tree and index it there."""
    dest = tree / "lib" / "modules" / kernel.version
    (dest / "kernel").mkdir(parents=True, exist_ok=True)
    for sub in MODULE_TREES:
        src = kernel.modules_dir / "kernel" / sub
        if src.exists():
            shutil.copytree(src, dest / "kernel" / sub, dirs_exist_ok=True)
    for rel in resolve(kernel, DRIVER_MODULES).files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(kernel.modules_dir / rel, dest / rel)
    for meta in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        if (kernel.modules_dir / meta).exists():
            shutil.copy2(kernel.modules_dir / meta, dest / meta)
    run(["depmod", "-b", tree, kernel.version])


@contextmanager
def unpacked(rootfs_tar: Path, work: Path) -> Iterator[Path]:
    """`rootfs_tar` extracted into a fresh `work` (owners, modes and xattrs as in the tar),
    removed after the block whatever happens (the board's and the server VM's disks)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        run(["tar", "-x", "-p", "--numeric-owner", "--xattrs", "-f", rootfs_tar, "-C", work])
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def make_ext4(tree: Path, image: Path, label: str, size: str) -> None:
    """An ext4 image of `tree` made with `mke2fs -d` (no mount), renamed into place when done."""
    tmp = image.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    run(["mke2fs", "-q", "-F", "-t", "ext4", "-L", label, "-d", tree, tmp, size])
    tmp.rename(image)


def build_base(rootfs_tar: Path, kernel: Kernel, arch: str, cache: Path) -> Path:
    """Build (or reuse) the shared base disk: an ext4 image made with `mke2fs -d` (no mount)."""
    path = cache / f"board-disk-{base_key(rootfs_tar, kernel, arch)}.img"
    if path.exists():
        return path
    with unpacked(rootfs_tar, cache / "tmp" / f"{path.stem}.tree") as work:
        run(["sh", project_file("images", "board", "customize.sh"), work, arch])
        install_modules(kernel, work)
        make_ext4(work, path, "netroot-sd", DISK_SIZE)
    return path


def base_identity(base: Path) -> str:
    """Which build of the base disk this is: a rebuild at the same path is another disk."""
    st = base.stat()
    return f"{base} {st.st_ino} {st.st_size} {st.st_mtime_ns}"


def overlay(base: Path, disk: Path, fresh: bool) -> None:
    """A board's own disk: a qcow2 over the base; kept across `lab up` like an SD card.

    The overlay only holds blocks that differ from its backing file, so it is worth keeping
    only over the very build it was made on (recorded beside it); over a rebuilt base it would
    read as a corrupt filesystem, and it is made anew (saved state included).
    """
    stamp = disk.with_name(disk.name + ".base")
    identity = base_identity(base)
    if disk.exists() and not fresh and stamp.exists() and stamp.read_text() == identity:
        return
    disk.unlink(missing_ok=True)
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, disk])
    stamp.write_text(identity)


def seed_tar(
    files: Mapping[str, tuple[bytes, int]], ssh_dirs: Mapping[str, int] | None = None
) -> bytes:
    """A tar of per-board files (path -> content, mode) laid over `/` at boot.

    Parent directories are not members, so unpacking never changes their modes; the `.ssh`
    directories in `ssh_dirs` (path -> owner uid) are the exception: sshd insists on 0700 and
    on the user owning them. Files under such a directory get its owner, the rest are root's;
    owners are numeric (the initramfs has no user database).
    """
    dirs = {"root/.ssh": 0, **(ssh_dirs or {})}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, uid in sorted(dirs.items()):
            ssh_dir = tarfile.TarInfo(path)
            ssh_dir.type = tarfile.DIRTYPE
            ssh_dir.mode = 0o700
            ssh_dir.uid = ssh_dir.gid = uid
            tar.addfile(ssh_dir)
        for name, (data, mode) in sorted(files.items()):
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size = len(data)
            info.mode = mode
            owner = [uid for d, uid in dirs.items() if info.name.startswith(d + "/")]
            info.uid = info.gid = owner[0] if owner else 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def files_tar(directory: str, files: Mapping[str, bytes]) -> bytes:
    """A tar of `files` (name -> content, mode 0644, root's) in `directory` and its parents."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        parts = directory.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            info = tarfile.TarInfo("/".join(parts[:depth]))
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(f"{'/'.join(parts)}/{name}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
