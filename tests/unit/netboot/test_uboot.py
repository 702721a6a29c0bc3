"""U-Boot's side of a lab board's network boot: the script image and the PXE config (pure)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from netroot.lab.host import kernel
from netroot.remote import uboot
from netroot.remote.tree import BoardBoot, apply_tree, plan_tree, scan_version


def test_script_image_is_what_mkimage_writes() -> None:
    image = uboot.script_image("echo hi\n")
    magic, hcrc, stamp, size, load, entry, dcrc = struct.unpack(">7I", image[:28])
    os_, arch, kind, comp = image[28:32]
    assert magic == 0x27051956
    assert (os_, arch, kind, comp) == (5, 2, 6, 0)  # linux, arm, script, none
    assert hcrc == zlib.crc32(image[:4] + b"\0\0\0\0" + image[8:64])
    data = image[64:]
    assert size == len(data) and dcrc == zlib.crc32(data)
    assert data == struct.pack(">II", 8, 0) + b"echo hi\n"  # multi-file: sizes, 0, the script
    assert (stamp, load, entry) == (0, 0, 0)
    assert image[32:64].rstrip(b"\0") == b"netroot netboot"


def test_the_same_script_is_the_same_bytes() -> None:
    assert uboot.script_image() == uboot.script_image()


def test_the_script_runs_pxe_from_the_boards_boot_file() -> None:
    lines = uboot.SCRIPT.splitlines()
    assert lines.index("dhcp") < lines.index("pxe get") < lines.index("pxe boot")
    assert "'" not in uboot.SCRIPT  # a quote U-Boot's hush would take for the start of a string


def test_the_kernel_is_fetched_clear_of_where_it_runs() -> None:
    # The lab's kernel image is copied by bootm to 0x40208000 on (22.7 MB for 6.1 armmp-lpae):
    # fetched at qemu_arm's default 0x40400000 it would overlap, and bootm refuses.
    lines = uboot.SCRIPT.splitlines()
    setenv = [i for i, line in enumerate(lines) if line.startswith("setenv kernel_addr_r ")]
    assert len(setenv) == 1 and setenv[0] < lines.index("pxe get")
    fetched = int(lines[setenv[0]].split()[-1], 16)
    assert fetched >= kernel.ARMHF_LOAD + 28 * 2**20  # the kernel runs below the fetched copy
    assert fetched + 32 * 2**20 <= 0x44000000  # qemu_arm's ramdisk_addr_r above it


def test_pxe_config_name() -> None:
    assert uboot.pxe_config_name("52:54:00:AA:BB:01") == "pxelinux.cfg/01-52-54-00-aa-bb-01"
    assert uboot.pxe_config_name("") == "pxelinux.cfg/default"


def test_pxe_config() -> None:
    text = uboot.pxe_config("vmlinuz", "initrd.img", "root=/dev/nfs ro\n")
    assert text.splitlines() == [
        "default netroot",
        "label netroot",
        "  kernel vmlinuz",
        "  initrd initrd.img",
        "  append root=/dev/nfs ro",
    ]
    assert "initrd" not in uboot.pxe_config("vmlinuz", None, "ro")


def _pxe_version(root: Path, version: str) -> Path:
    firmware = root / version / "boot" / "firmware"
    firmware.mkdir(parents=True)
    for name in ("vmlinuz", "initrd.img", "config.txt", "cmdline.txt"):
        (firmware / name).write_text(f"{version}:{name}\n")
    return root / version


def test_a_version_with_a_kernel_for_uboot_gets_a_pxe_config_per_board(tmp_path: Path) -> None:
    version = "cccccccccccccccc"
    found = scan_version(version, _pxe_version(tmp_path / "versions", version))
    assert found.pxe
    root = tmp_path / "tftp"
    board = BoardBoot(
        "nb-01", "4e420001", version, "root=/dev/nfs ip=dhcp h=nb-01", "52:54:00:77:00:33"
    )
    plan = plan_tree(root, [board], {version: found})
    assert plan.bootcode is None
    changes = apply_tree(plan)
    assert "boot.scr.uimg" in changes and "bootcode.bin" not in changes
    assert (root / "boot.scr.uimg").read_bytes() == uboot.script_image()
    assert not (root / "bootcode.bin").exists()
    # U-Boot's `pxe get` tries 01-<mac> first: no round trips for ten names that are not there
    config = (root / "4e420001" / "pxelinux.cfg" / "01-52-54-00-77-00-33").read_text()
    assert "  append root=/dev/nfs ip=dhcp h=nb-01" in config.splitlines()
    assert (root / "4e420001" / "vmlinuz").read_text() == f"{version}:vmlinuz\n"
    assert (root / "4e420001" / "cmdline.txt").read_text() == "root=/dev/nfs ip=dhcp h=nb-01\n"
    assert apply_tree(plan_tree(root, [board], {version: found})) == []  # a rerun: no change
