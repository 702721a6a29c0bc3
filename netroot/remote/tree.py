"""The TFTP tree a Pi 3B's boot ROM reads, planned as data and switched per board atomically.

A 3B ROM (network boot in OTP) fetches `bootcode.bin` from the TFTP root, then looks for
`<serial>/start.elf` and reads the rest of the firmware, `config.txt`, `cmdline.txt`, the kernel
and its DTBs from that directory (raspberrypi/documentation, network boot). The tree:

    <root>/bootcode.bin                          from the versions' boot files (one for all)
    <root>/.versions/<version>/...               a version's /boot/firmware (or /boot), copied once
    <root>/.boards/<serial>-<version>-<hash>/    per board: links into .versions + its cmdline.txt
    <root>/<serial> -> .boards/<serial>-...      the ROM's view: one symlink per board

Switching a board is renaming a new symlink over `<serial>` (rename(2) is atomic): the ROM sees
the old directory or the new one, never a mix. The hash in a board directory's name covers its
cmdline, so a new cmdline for the same version is a new directory too.

A version whose boot files hold `vmlinuz` (the lab's QEMU boards, booted by U-Boot: see
netroot.remote.uboot) gets, per board, `<serial>/pxelinux.cfg/01-<mac>` (`default` without a
MAC) with the same cmdline,
and the root gets U-Boot's `boot.scr.uimg`; a Pi firmware version needs neither.

Planning (`scan_version`, `plan_tree`, `pending`) only reads; `apply_tree` writes. Standard
library and netroot.errors/fsutil only: the server role ships these modules to the NFS server
(in netroot-tftp), where netroot.remote.switch runs them (the tree lives there).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from netroot.errors import UsageError
from netroot.fsutil import atomic_write, fsync_dir
from netroot.remote import uboot

# Where Raspberry Pi OS keeps the FAT boot partition's files in a root tree, newest first.
BOOT_DIRS = ("boot/firmware", "boot")
BOOTCODE = "bootcode.bin"
# The files a 3B cannot boot without (start.elf is how the ROM recognises a board directory).
REQUIRED = ("bootcode.bin", "start.elf", "fixup.dat")
CMDLINE = "cmdline.txt"
# A kernel (and initramfs) that U-Boot boots by PXE, as Debian names them: the lab's boards.
PXE_KERNEL, PXE_INITRD = "vmlinuz", "initrd.img"
VERSIONS, BOARDS = ".versions", ".boards"


@dataclass(frozen=True)
class VersionBoot:
    """A version's boot files: where they are in its root and their relative paths."""

    version: str
    source: Path  # <version root>/boot/firmware or /boot
    files: tuple[str, ...]  # POSIX paths relative to source, sorted; the version's cmdline excluded

    @property
    def pxe(self) -> bool:
        """Booted by U-Boot's PXE (it has `vmlinuz`) rather than by a Pi's firmware."""
        return PXE_KERNEL in self.files


@dataclass(frozen=True)
class BoardBoot:
    """What one netboot board should boot: its serial, its version and its cmdline."""

    board: str
    serial: str  # 8 lowercase hex digits, as the ROM names its directory
    version: str
    cmdline: str
    mac: str = ""  # names a U-Boot board's PXE config (its first try), when known


@dataclass(frozen=True)
class BoardDir:
    """One board's planned directory: the links into its version and its own cmdline.txt."""

    board: str
    serial: str
    version: str
    name: str  # relative to the root: .boards/<serial>-<version>-<hash>
    files: tuple[str, ...]
    cmdline: str
    pxe_config: str | None = None  # the PXE config of a U-Boot board, else None
    pxe_name: str = uboot.PXE_CONFIG  # its path in the board's directory


@dataclass(frozen=True)
class TreePlan:
    """The whole tree: bootcode.bin's source, the versions to copy and every board directory."""

    root: Path
    bootcode: Path | None  # None when no board boots a Pi firmware version
    versions: tuple[VersionBoot, ...]
    boards: tuple[BoardDir, ...]
    boot_script: bytes | None = None  # U-Boot's boot.scr.uimg, when a board boots by PXE


def scan_version(version: str, version_root: Path) -> VersionBoot:
    """Find the version's boot directory and list its files (reads only)."""
    for rel in BOOT_DIRS:
        source = version_root / rel
        if (source / "start.elf").is_file() or (source / PXE_KERNEL).is_file():
            files = sorted(
                p.relative_to(source).as_posix()
                for p in source.rglob("*")
                if (p.is_file() or p.is_symlink()) and p.relative_to(source).as_posix() != CMDLINE
            )
            return VersionBoot(version, source, tuple(files))
    raise UsageError(
        f"version {version}: no start.elf in {' or '.join(f'/{d}' for d in BOOT_DIRS)} of "
        f"{version_root}",
        "a netboot version needs the Raspberry Pi firmware in the image "
        "(raspberrypi-bootloader / raspi-firmware installs it to /boot/firmware), "
        f"or for U-Boot a {PXE_KERNEL} there",
    )


def board_dir_name(board: BoardBoot) -> str:
    """.boards/<serial>-<version>-<first 12 hex of sha256(cmdline and MAC)>."""
    seed = board.cmdline + (board.mac and f" {board.mac}")
    digest = hashlib.sha256(seed.encode()).hexdigest()[:12]
    return f"{BOARDS}/{board.serial}-{board.version}-{digest}"


def plan_tree(
    root: Path, boards: Sequence[BoardBoot], versions: Mapping[str, VersionBoot]
) -> TreePlan:
    """The tree for `boards`; UsageError naming the board when something it needs is missing."""
    seen: dict[str, str] = {}
    planned = []
    for board in sorted(boards, key=lambda b: b.serial):
        if len(board.serial) != 8 or any(c not in "0123456789abcdef" for c in board.serial):
            raise UsageError(
                f"{board.board}: serial {board.serial!r} is not 8 lowercase hex digits"
            )
        if board.serial in seen:
            raise UsageError(
                f"{board.board} and {seen[board.serial]} have the same serial {board.serial}",
                "each board's netroot_serial must be its own (cat /proc/cpuinfo on the board)",
            )
        seen[board.serial] = board.board
        if "\n" in board.cmdline.strip():
            raise UsageError(f"{board.board}: cmdline.txt must be one line")
        found = versions.get(board.version)
        if found is None:
            raise UsageError(f"{board.board}: version {board.version} was not scanned")
        missing = [f for f in REQUIRED if f not in found.files]
        if missing and not found.pxe:
            raise UsageError(
                f"{board.board}: version {board.version} lacks {', '.join(missing)} in "
                f"{found.source}",
                "a Pi 3B needs the Raspberry Pi firmware (bootcode.bin, start.elf, fixup.dat)",
            )
        planned.append(
            BoardDir(
                board.board,
                board.serial,
                board.version,
                board_dir_name(board),
                found.files,
                board.cmdline.strip() + "\n",
                _pxe_config(found, board.cmdline) if found.pxe else None,
                uboot.pxe_config_name(board.mac),
            )
        )
    used = sorted({b.version for b in planned})
    if not used:
        raise UsageError("no netboot board to plan a TFTP tree for")
    # bootcode.bin only loads start.elf from the board's directory: any version's copy serves.
    pi = [v for v in used if BOOTCODE in versions[v].files]
    bootcode = versions[pi[-1]].source / BOOTCODE if pi else None
    script = uboot.script_image() if any(versions[v].pxe for v in used) else None
    return TreePlan(root, bootcode, tuple(versions[v] for v in used), tuple(planned), script)


def _pxe_config(version: VersionBoot, cmdline: str) -> str:
    initrd = PXE_INITRD if PXE_INITRD in version.files else None
    return uboot.pxe_config(PXE_KERNEL, initrd, cmdline)


def linked_version(root: Path, serial: str) -> str | None:
    """The version `<root>/<serial>` points at now, or None when the board has no directory."""
    try:
        target = os.readlink(root / serial)
    except OSError:
        return None
    name = Path(target).name  # <serial>-<version>-<hash>
    return name[len(serial) + 1 : name.rindex("-")] if name.startswith(serial + "-") else None


def _copy_version(root: Path, version: VersionBoot) -> bool:
    """Copy a version's boot files to .versions/<version> once (staged, then renamed in)."""
    dest = root / VERSIONS / version.version
    if dest.is_dir():
        return False
    stage = root / VERSIONS / f".{version.version}.staging"
    shutil.rmtree(stage, ignore_errors=True)
    for rel in version.files:
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(version.source / rel, target, follow_symlinks=True)
    os.replace(stage, dest)
    fsync_dir(dest.parent)
    return True


def _make_board_dir(root: Path, board: BoardDir) -> bool:
    """Fill .boards/<name> with relative links into the version and the board's cmdline.txt."""
    dest = root / board.name
    if dest.is_dir():
        return False
    stage = dest.with_name(f".{dest.name}.staging")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    version_dir = root / VERSIONS / board.version
    for rel in board.files:
        link = stage / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(version_dir / rel, dest / Path(rel).parent), link)
    atomic_write(stage / CMDLINE, board.cmdline)
    if board.pxe_config is not None:
        atomic_write(stage / board.pxe_name, board.pxe_config)
    os.replace(stage, dest)
    fsync_dir(dest.parent)
    return True


def switch_board(root: Path, board: BoardDir) -> bool:
    """Point `<root>/<serial>` at the board's directory by renaming a new symlink over it."""
    link = root / board.serial
    try:
        if os.readlink(link) == board.name:
            return False
    except FileNotFoundError:
        pass
    except OSError:
        raise UsageError(
            f"{link} exists and is not a symlink: netroot will not replace it",
            f"move {link} aside; netroot manages <serial> entries as symlinks",
        ) from None
    tmp = root / f".{board.serial}.switch"
    tmp.unlink(missing_ok=True)
    os.symlink(board.name, tmp)
    os.replace(tmp, link)
    fsync_dir(root)
    return True


def _prune(root: Path, plan: TreePlan) -> list[str]:
    """Remove board and version directories no board links to any more."""
    keep_boards = {Path(b.name).name for b in plan.boards}
    for entry in root.iterdir():  # boards outside this plan keep their directories
        if entry.is_symlink() and not entry.name.startswith("."):
            keep_boards.add(Path(os.readlink(entry)).name)
    removed = []
    for entry in sorted((root / BOARDS).iterdir()):
        if entry.name not in keep_boards:
            shutil.rmtree(entry)
            removed.append(f"removed {BOARDS}/{entry.name}")
    # <serial>-<version>-<hash>: the serial is 8 characters, the hash has no "-".
    keep_versions = {name[9 : name.rindex("-")] for name in keep_boards if name.count("-") >= 2}
    for entry in sorted((root / VERSIONS).iterdir()):
        if entry.name not in keep_versions and not entry.name.startswith("."):
            shutil.rmtree(entry)
            removed.append(f"removed {VERSIONS}/{entry.name}")
    return removed


def _top_files(plan: TreePlan) -> dict[str, bytes]:
    """The files at the root every board reads first: bootcode.bin, U-Boot's script."""
    files = {}
    if plan.bootcode is not None:
        files[BOOTCODE] = plan.bootcode.read_bytes()
    if plan.boot_script is not None:
        files[uboot.BOOT_SCRIPT] = plan.boot_script
    return files


def pending(plan: TreePlan) -> list[str]:
    """What `apply_tree(plan)` would change, in its words, without changing anything."""
    root = plan.root
    changes = [
        f"copied {v.version}'s boot files"
        for v in plan.versions
        if not (root / VERSIONS / v.version).is_dir()
    ]
    for name, data in _top_files(plan).items():
        top = root / name
        if not top.is_file() or top.read_bytes() != data:
            changes.append(name)
    for board in plan.boards:
        try:
            linked = os.readlink(root / board.serial)
        except OSError:
            linked = None
        if linked != board.name:
            changes.append(f"{board.board} ({board.serial}) -> {board.version}")
    return changes


def apply_tree(plan: TreePlan) -> list[str]:
    """Make the tree match `plan`; the changes made, one line each ([] when it already did)."""
    changes = []
    root = plan.root
    (root / VERSIONS).mkdir(parents=True, exist_ok=True)
    (root / BOARDS).mkdir(exist_ok=True)
    for version in plan.versions:
        if _copy_version(root, version):
            changes.append(f"copied {version.version}'s boot files")
    for name, data in _top_files(plan).items():
        top = root / name
        if not top.is_file() or top.read_bytes() != data:
            atomic_write(top, data)
            changes.append(name)
    for board in plan.boards:
        _make_board_dir(root, board)
        if switch_board(root, board):
            changes.append(f"{board.board} ({board.serial}) -> {board.version}")
    return changes + _prune(root, plan)
