"""Pure parts of the lab's builds: recipes, module resolution, initramfs archive, seed tars."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile

import pytest

from netroot.lab import cpio, doctor, recipes
from netroot.lab.host import disk
from netroot.lab.modules import parse_show_depends

SHOW_DEPENDS = """\
insmod /k/lib/modules/6.1.0-57-arm64/kernel/drivers/virtio/virtio_pci_modern_dev.ko
insmod /k/lib/modules/6.1.0-57-arm64/kernel/drivers/virtio/virtio_pci.ko
builtin crc32c
insmod /k/lib/modules/6.1.0-57-arm64/kernel/lib/crc16.ko
insmod /k/lib/modules/6.1.0-57-arm64/kernel/fs/ext4/ext4.ko
insmod /k/lib/modules/6.1.0-57-arm64/kernel/lib/crc16.ko
"""


def test_show_depends_keeps_order_dedups_and_strips_the_prefix() -> None:
    res = parse_show_depends(SHOW_DEPENDS, "/k/lib/modules/6.1.0-57-arm64/")
    assert res.files == (
        "kernel/drivers/virtio/virtio_pci_modern_dev.ko",
        "kernel/drivers/virtio/virtio_pci.ko",
        "kernel/lib/crc16.ko",
        "kernel/fs/ext4/ext4.ko",
    )
    assert res.builtin == ("crc32c",)


def test_show_depends_rejects_modules_outside_the_tree_and_unknown_lines() -> None:
    with pytest.raises(ValueError, match="outside"):
        parse_show_depends("insmod /other/x.ko\n", "/k/lib/modules/v")
    with pytest.raises(ValueError, match="unexpected"):
        parse_show_depends("FATAL: Module nope not found\n", "/k/lib/modules/v")


def _read_newc(data: bytes) -> list[tuple[str, int, bytes, int, int]]:
    """A reader for the newc format, independent of the writer's code."""
    out: list[tuple[str, int, bytes, int, int]] = []
    pos = 0
    while True:
        assert data[pos : pos + 6] == b"070701"
        f = [int(data[pos + 6 + 8 * i : pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rmaj, rmin, namesize = f[1], f[6], f[9], f[10], f[11]
        name_start = pos + 110
        name = data[name_start : name_start + namesize - 1].decode()
        body = name_start + namesize
        body += (4 - body % 4) % 4
        content = data[body : body + size]
        pos = body + size + (4 - (body + size) % 4) % 4
        if name == "TRAILER!!!":
            return out
        out.append((name, mode, content, rmaj, rmin))


def test_newc_archive_round_trips_files_dirs_links_and_devices() -> None:
    entries = [
        cpio.directory("bin"),
        cpio.file("init", b"#!/bin/sh\n", 0o755),
        cpio.file("odd", b"12345"),  # forces padding
        cpio.symlink("bin/sh", "busybox"),
        cpio.chardev("dev/console", 5, 1),
    ]
    members = _read_newc(gzip.decompress(cpio.gzipped(entries)))
    assert [m[0] for m in members] == ["bin", "init", "odd", "bin/sh", "dev/console"]
    by_name = {m[0]: m for m in members}
    assert stat.S_ISDIR(by_name["bin"][1])
    assert by_name["init"][2] == b"#!/bin/sh\n" and stat.S_IMODE(by_name["init"][1]) == 0o755
    assert by_name["odd"][2] == b"12345"
    assert stat.S_ISLNK(by_name["bin/sh"][1]) and by_name["bin/sh"][2] == b"busybox"
    assert stat.S_ISCHR(by_name["dev/console"][1]) and by_name["dev/console"][3:] == (5, 1)


def test_initramfs_is_reproducible() -> None:
    entries = [cpio.file("a", b"x")]
    assert cpio.gzipped(entries) == cpio.gzipped(entries)


def test_seed_tar_is_root_owned_with_modes_and_no_parent_dirs() -> None:
    data = disk.seed_tar(
        {"etc/hostname": (b"pi-01\n", 0o644), "etc/ssh/ssh_host_ed25519_key": (b"k", 0o600)}
    )
    assert len(data) % 512 == 0  # it is read as a raw disk
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {"root/.ssh", "etc/hostname", "etc/ssh/ssh_host_ed25519_key"}
    assert members["root/.ssh"].isdir() and members["root/.ssh"].mode == 0o700
    assert members["etc/ssh/ssh_host_ed25519_key"].mode == 0o600
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())


def test_seed_tar_gives_a_user_their_own_ssh_dir_and_keys() -> None:
    data = disk.seed_tar(
        {"home/pi/.ssh/authorized_keys": (b"ssh-ed25519 AAA lab\n", 0o600)},
        {"home/pi/.ssh": 1000},
    )
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["home/pi/.ssh"].isdir() and members["home/pi/.ssh"].mode == 0o700
    # sshd reads authorized_keys as the user and refuses a .ssh the user does not own
    assert members["home/pi/.ssh"].uid == members["home/pi/.ssh/authorized_keys"].uid == 1000
    assert members["root/.ssh"].uid == 0


def test_recipe_key_changes_with_packages_and_argv_is_mmdebstrap() -> None:
    a = recipes.Recipe("x", "armhf", "minbase", ("python3",))
    b = recipes.Recipe("x", "armhf", "minbase", ("python3", "python3-numpy"))
    assert a.key != b.key and a.filename != b.filename
    argv = b.argv("/out.tar")
    assert argv[:5] == [
        "mmdebstrap",
        "--quiet",
        "--format=tar",
        "--arch=armhf",
        "--variant=minbase",
    ]
    assert "--include=python3,python3-numpy" in argv
    assert argv[-3:] == ["bookworm", "/out.tar", recipes.MIRROR]


def test_board_recipe_has_what_the_contract_promises() -> None:
    for pkg in ("systemd-sysv", "openssh-server", "python3", "nfs-common", "sudo"):
        assert pkg in recipes.BOARD.packages
    assert recipes.BOARD.arch == "armhf" and recipes.RASPBIAN.arch == "armhf"
    assert {"nfs-ganesha", "nfs-ganesha-vfs", "rpcbind"} <= set(recipes.SERVER.packages)


def test_the_torch_image_is_arm64_with_debians_torch() -> None:
    # Debian has python3-torch for arm64 only; the recipe names it, so its key changes with it.
    torch = recipes.RASPBIAN_TORCH
    assert torch.arch == "arm64" and "python3-torch" in torch.packages
    assert "--arch=arm64" in torch.argv("/out.tar")
    assert len({r.filename for r in recipes.ALL}) == len(recipes.ALL)


def test_doctor_names_missing_packages_in_one_apt_command() -> None:
    present = {"ip", "docker", "tar"}
    gone = doctor.missing(lambda what: what in present)
    assert "qemu-system-arm" in {r.package for r in gone}
    assert "iproute2" not in {r.package for r in gone}
    cmd = doctor.apt_command(gone)
    assert cmd.startswith("apt-get install ")
    assert cmd.count("openssh-client") == 1 and cmd.count("kmod") == 1
    assert doctor.missing(lambda _: True) == []
