"""What QEMU boots for an armhf lab board: the zImage's kernel, uncompressed, in a U-Boot image."""

from __future__ import annotations

import lzma
import struct
import zlib
from pathlib import Path

import pytest

from netroot.lab.host import kernel
from netroot.remote import uboot

_XZ = b"\xfd7zXZ\x00"


def _zimage(payload: bytes, size: int | None = None) -> bytes:
    """A zImage's layout: code with the zImage magic at 0x24 (and an XZ magic in its code, as
    Debian's armmp decompressor has), the XZ stream, the kernel's size, padding."""
    head = bytearray(0x40)
    struct.pack_into("<I", head, 0x24, 0x016F2818)
    code = bytes(head) + b"decompressor" + _XZ + b"not a stream" * 8
    stream = lzma.compress(payload, lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    n = len(payload) if size is None else size
    return code + stream + struct.pack("<I", n) + b"\0" * 12


def test_the_kernel_is_the_stream_that_decompresses_to_the_stated_size() -> None:
    payload = bytes(range(256)) * 400 + _XZ  # the magic inside the kernel too
    assert kernel.uncompressed(_zimage(payload)) == payload


def test_a_stream_whose_size_does_not_match_is_not_the_kernel() -> None:
    assert kernel.uncompressed(_zimage(b"kernel" * 100, size=7)) is None


def test_an_image_that_is_not_a_zimage_is_left_alone() -> None:
    arm64 = b"\0" * 0x38 + b"ARMd" + b"\0" * 64  # arm64's Image: magic at 0x38, no zImage magic
    assert kernel.uncompressed(arm64) is None
    assert kernel.uncompressed(b"") is None


def test_kernel_image_header_is_what_mkimage_writes() -> None:
    image = uboot.legacy_image(b"\1\2\3\4", uboot.TYPE_KERNEL, "Linux-6.1", 0x40208000, 0x40208000)
    magic, hcrc, stamp, size, load, entry, dcrc = struct.unpack(">7I", image[:28])
    assert magic == 0x27051956
    assert tuple(image[28:32]) == (5, 2, 2, 0)  # linux, arm, kernel, uncompressed
    assert hcrc == zlib.crc32(image[:4] + b"\0\0\0\0" + image[8:64])
    assert (stamp, size, dcrc) == (0, 4, zlib.crc32(b"\1\2\3\4"))
    assert (load, entry) == (0x40208000, 0x40208000)  # where the decompressor puts it
    assert image[64:] == b"\1\2\3\4"


def _kernel(tmp_path: Path, image: bytes) -> kernel.Kernel:
    (tmp_path / "boot").mkdir()
    kern = kernel.Kernel(tmp_path, "6.1.0-test")
    kern.image.write_bytes(image)
    return kern


def test_qemu_boots_the_uncompressed_kernel_cached_beside_the_zimage(tmp_path: Path) -> None:
    payload = b"the kernel" * 1000
    kern = _kernel(tmp_path, _zimage(payload))
    path = kernel.qemu_image(kern)
    assert path != kern.image and path.parent == kern.image.parent
    data = path.read_bytes()
    assert data[64:] == payload and struct.unpack(">I", data[16:20])[0] == 0x40208000
    kern.image.write_bytes(b"changed")  # the cached image is reused, not rebuilt
    assert kernel.qemu_image(kern) == path and path.read_bytes() == data
    assert not list(tmp_path.glob("boot/*.tmp"))


def test_qemu_boots_any_other_image_as_it_is(tmp_path: Path) -> None:
    kern = _kernel(tmp_path, b"\0" * 0x38 + b"ARMd" + b"\0" * 64)
    assert kernel.qemu_image(kern) == kern.image
    assert [p.name for p in (tmp_path / "boot").iterdir()] == [kern.image.name]


def test_an_image_that_is_no_zimage_is_told_by_its_header_not_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kern = _kernel(tmp_path, b"\0" * 0x38 + b"ARMd" + b"\0" * 64)

    def whole(self: Path) -> bytes:
        raise AssertionError(f"{self} read whole")

    monkeypatch.setattr(Path, "read_bytes", whole)
    assert kernel.qemu_image(kern) == kern.image
