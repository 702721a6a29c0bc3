"""The TFTP tree: planned from the versions' boot files, applied, switched per board atomically."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from netroot.errors import UsageError
from netroot.remote import tree
from netroot.remote.tree import BoardBoot, apply_tree, plan_tree, scan_version

from .conftest import make_version

A, B = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"


def boards(version_1: str, version_2: str) -> list[BoardBoot]:
    return [
        BoardBoot("pi-01", "1a2b3c01", version_1, f"root=/dev/nfs v={version_1} h=pi-01"),
        BoardBoot("pi-02", "1a2b3c02", version_2, f"root=/dev/nfs v={version_2} h=pi-02"),
    ]


def scan(tmp_path: Path) -> dict[str, tree.VersionBoot]:
    exports = tmp_path / "versions"
    return {
        A: scan_version(A, make_version(exports, A)),
        B: scan_version(B, make_version(exports, B, boot="boot")),  # pre-Bookworm layout
    }


def test_scan_finds_firmware_or_boot_and_leaves_the_versions_cmdline_out(tmp_path: Path) -> None:
    found = scan(tmp_path)
    assert found[A].source == tmp_path / "versions" / A / "boot/firmware"
    assert found[B].source == tmp_path / "versions" / B / "boot"
    assert "cmdline.txt" not in found[A].files
    assert "overlays/vc4-kms-v3d.dtbo" in found[A].files


def test_a_version_without_firmware_is_refused(tmp_path: Path) -> None:
    (tmp_path / "v" / "boot").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"no start\.elf in /boot/firmware or /boot"):
        scan_version("v", tmp_path / "v")


def test_plan_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "tftp"
    plan = plan_tree(root, boards(A, B), scan(tmp_path))
    assert not root.exists()
    assert [b.name.split("-")[1] for b in plan.boards] == [A, B]
    assert plan.bootcode is not None and plan.bootcode.name == "bootcode.bin"


def test_apply_builds_what_the_rom_reads(tmp_path: Path) -> None:
    root = tmp_path / "tftp"
    changes = apply_tree(plan_tree(root, boards(A, B), scan(tmp_path)))
    assert "pi-01 (1a2b3c01) -> " + A in changes
    assert (root / "bootcode.bin").read_text() == f"{B}:bootcode.bin\n"
    assert (root / "1a2b3c01" / "start.elf").read_text() == f"{A}:start.elf\n"
    assert (root / "1a2b3c02" / "overlays/vc4-kms-v3d.dtbo").read_text() == (
        f"{B}:overlays/vc4-kms-v3d.dtbo\n"
    )
    # The board's own cmdline, never the version's.
    assert (root / "1a2b3c01" / "cmdline.txt").read_text() == f"root=/dev/nfs v={A} h=pi-01\n"
    assert tree.linked_version(root, "1a2b3c01") == A
    assert tree.linked_version(root, "ffffffff") is None
    # A second run changes nothing.
    assert apply_tree(plan_tree(root, boards(A, B), scan(tmp_path))) == []


def test_switching_a_board_renames_its_link_and_prunes_the_old_directory(tmp_path: Path) -> None:
    root = tmp_path / "tftp"
    versions = scan(tmp_path)
    apply_tree(plan_tree(root, boards(A, B), versions))
    before = os.readlink(root / "1a2b3c01")
    changes = apply_tree(plan_tree(root, boards(B, B), versions))
    assert f"pi-01 (1a2b3c01) -> {B}" in changes
    assert f"removed {before}" in changes
    assert f"removed .versions/{A}" in changes  # no board boots A any more
    assert (root / "1a2b3c01" / "start.elf").read_text() == f"{B}:start.elf\n"
    assert (root / "1a2b3c01").is_symlink()
    assert not list(root.glob(".*.switch")) and not list(root.glob(".*/.*staging"))


def test_a_new_cmdline_for_the_same_version_is_a_new_directory(tmp_path: Path) -> None:
    root = tmp_path / "tftp"
    versions = scan(tmp_path)
    apply_tree(plan_tree(root, boards(A, B), versions))
    first = os.readlink(root / "1a2b3c01")
    changed = [BoardBoot("pi-01", "1a2b3c01", A, "root=/dev/nfs quiet"), boards(A, B)[1]]
    apply_tree(plan_tree(root, changed, versions))
    assert os.readlink(root / "1a2b3c01") != first
    assert (root / "1a2b3c01" / "cmdline.txt").read_text() == "root=/dev/nfs quiet\n"


def test_boards_outside_the_plan_keep_their_directories(tmp_path: Path) -> None:
    root = tmp_path / "tftp"
    versions = scan(tmp_path)
    apply_tree(plan_tree(root, boards(A, B), versions))
    apply_tree(plan_tree(root, boards(A, B)[:1], versions))  # only pi-01 this time
    assert (root / "1a2b3c02" / "start.elf").read_text() == f"{B}:start.elf\n"


def test_a_real_directory_in_place_of_a_link_is_not_replaced(tmp_path: Path) -> None:
    root = tmp_path / "tftp"
    (root / "1a2b3c01").mkdir(parents=True)
    with pytest.raises(UsageError, match="is not a symlink"):
        apply_tree(plan_tree(root, boards(A, B), scan(tmp_path)))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (BoardBoot("pi-09", "1A2B3C01", A, "x"), "not 8 lowercase hex digits"),
        (BoardBoot("pi-09", "1a2b3c01", A, "x"), "pi-09 and pi-01 have the same serial"),
        (BoardBoot("pi-09", "1a2b3c09", "cccccccccccccccc", "x"), "was not scanned"),
        (BoardBoot("pi-09", "1a2b3c09", A, "a\nb"), "must be one line"),
    ],
)
def test_plan_refuses_what_cannot_boot(tmp_path: Path, bad: BoardBoot, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        plan_tree(tmp_path, [*boards(A, B), bad], scan(tmp_path))


def test_a_version_lacking_firmware_files_names_them(tmp_path: Path) -> None:
    version = make_version(tmp_path, A)
    (version / "boot/firmware/fixup.dat").unlink()
    found = {A: scan_version(A, version)}
    with pytest.raises(UsageError, match=r"lacks fixup\.dat"):
        plan_tree(tmp_path, [BoardBoot("pi-01", "1a2b3c01", A, "x")], found)
