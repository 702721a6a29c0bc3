"""Property-buffer encoding/decoding, pure, and the fake firmware speaking it."""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

import pytest

from netroot.qpu import fake
from netroot.qpu import mailbox as mb
from netroot.qpu.mailbox import PropertyError, Tag


def words(buf: bytearray) -> list[int]:
    return list(struct.unpack(f"<{len(buf) // 4}I", bytes(buf)))


def test_encode_layout_and_padding() -> None:
    buf = mb.encode([Tag(mb.TAG_CLOCK_RATE, (5,), 2)])
    # size, code, tag, value bytes, req/resp, id, room for the rate, end tag (32 bytes).
    assert words(buf) == [32, 0, 0x30002, 8, 0, 5, 0, 0]
    buf = mb.encode([Tag(mb.TAG_EXECUTE_QPU, (12, 0xC0001000, 0, 100))])
    assert words(buf)[:8] == [48, 0, 0x30011, 16, 0, 12, 0xC0001000, 0]
    assert len(buf) % 16 == 0


def reply(buf: bytearray, code: int, tag_code: int, values: list[int]) -> bytearray:
    w = words(buf)
    w[1], w[4] = code, tag_code
    w[5 : 5 + len(values)] = values
    return bytearray(struct.pack(f"<{len(w)}I", *w))


def test_decode_success_and_each_failure() -> None:
    tags = [Tag(mb.TAG_CLOCK_RATE, (5,), 2)]
    buf = mb.encode(tags)
    assert mb.decode(reply(buf, mb.REPLY_OK, 0x80000008, [5, 400_000_000]), tags) == [
        (5, 400_000_000)
    ]
    with pytest.raises(PropertyError) as err:
        mb.decode(reply(buf, mb.REPLY_PARSE_ERROR, 0, []), tags)
    assert err.value.kind == "parse-error"
    with pytest.raises(PropertyError) as err:
        mb.decode(buf, tags)  # code still 0: the firmware never processed it
    assert err.value.kind == "not-processed"
    with pytest.raises(PropertyError) as err:
        mb.decode(reply(buf, mb.REPLY_OK, 8, [5, 1]), tags)  # bit 31 clear
    assert err.value.kind == "unanswered"
    with pytest.raises(PropertyError) as err:
        mb.decode(reply(buf, mb.REPLY_OK, 0x80000000, []), tags)  # QEMU style
    assert err.value.kind == "empty"
    assert "QEMU" in str(err.value)


def test_fake_firmware_round_trips_through_the_mailbox_client() -> None:
    board = fake.FakeBoard("healthy")
    box = mb.Mailbox(board.open_transport())
    assert box.board_revision() == fake.PI3B_REVISION
    assert box.clock_rate() == 400_000_000
    assert box.vc_memory() == (0x3C000000, 64 << 20)
    handle = box.allocate(4096, 4096, mb.MEM_FLAG_DIRECT)
    bus = box.lock(handle)
    assert bus >> 30 == 3  # the DIRECT (0xC0000000) alias
    window = board.map_physical(bus & mb.BUS_TO_PHYS, 4096)
    window.write_words(8, [7, 8])
    assert board.memory.read_words(bus + 8, 2) == [7, 8]
    assert (box.unlock(handle), box.release(handle)) == (0, 0)
    assert board.mailbox.calls[-2:] == [mb.TAG_UNLOCK, mb.TAG_RELEASE]


def test_qemu_firmware_answers_unknown_tags_empty() -> None:
    box = mb.Mailbox(fake.FakeBoard("qemu").open_transport())
    assert box.firmware_revision() == 346337
    with pytest.raises(PropertyError) as err:
        box.vc_memory()
    assert err.value.kind == "empty"


def test_fake_scripts_os_errors_with_real_errnos() -> None:
    with pytest.raises(FileNotFoundError) as missing:
        fake.FakeBoard("no_vcio").open_transport()
    assert missing.value.errno == 2
    with pytest.raises(PermissionError) as eperm:
        fake.FakeBoard("devmem_eperm").map_physical(0x3FC00000, 4096)
    assert eperm.value.errno == 1
    box = mb.Mailbox(fake.FakeBoard("kernel_etimedout").open_transport())
    with pytest.raises(TimeoutError) as timeout:
        box.execute_qpu(1, 0, False, 100)
    assert timeout.value.errno == 110


def test_unknown_scenario_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fake scenario"):
        fake.FakeBoard("sunny")


def test_devmem_window_maps_at_the_page_offset(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    path.write_bytes(bytes(3 * mmap.PAGESIZE))
    phys = mmap.PAGESIZE + 24  # not page aligned: the window must add the delta itself
    window = mb.DevMemWindow(phys, 64, path=str(path))
    window.write_words(8, [0x11223344, 0xAABBCCDD])
    assert window.read_words(8, 2) == [0x11223344, 0xAABBCCDD]
    window.close()
    data = path.read_bytes()
    assert struct.unpack_from("<2I", data, phys + 8) == (0x11223344, 0xAABBCCDD)


def test_vcio_transport_reports_the_real_errno(tmp_path: Path) -> None:
    path = tmp_path / "vcio"
    path.write_bytes(b"")
    transport = mb.MailboxTransport(mb.VcioDevice(str(path)), 4)
    with pytest.raises(OSError) as err:
        mb.Mailbox(transport).firmware_revision()  # a regular file is no mailbox
    assert err.value.errno == 25  # ENOTTY
    transport.close()
    with pytest.raises(FileNotFoundError):
        mb.VcioDevice(str(path) + "-missing")


@pytest.mark.parametrize(("pointer_bytes", "number"), [(4, 0xC0046400), (8, 0xC0086400)])
def test_property_ioctl_follows_the_userspace_pointer_size(pointer_bytes: int, number: int) -> None:
    assert mb.property_ioctl(pointer_bytes) == number  # _IOWR(100, 0, char *)
    with pytest.raises(ValueError, match="pointer size 2"):
        mb.property_ioctl(2)


@pytest.mark.parametrize(("bits", "number"), [(32, 0xC0046400), (64, 0xC0086400)])
def test_fake_kernel_takes_the_number_of_its_userspace(bits: int, number: int) -> None:
    board = fake.FakeBoard("healthy", userspace_bits=bits)
    transport = board.open_transport()
    assert transport.request == number
    assert mb.Mailbox(transport).board_revision() == fake.PI3B_REVISION
    assert board.mailbox.requests == [number]


def test_arm64_userspace_refuses_the_armhf_number_and_s1_says_why() -> None:
    from netroot.qpu import kernels, program

    # What netroot did before: the armhf number from a 64-bit process.
    board = fake.FakeBoard("healthy", userspace_bits=64, pointer_bytes=4)
    with pytest.raises(OSError) as err:
        mb.Mailbox(board.open_transport()).board_revision()
    assert err.value.errno == 22  # EINVAL, as the driver answers
    words = {k.name: k.words for k in kernels.all_kernels().values()}
    s1 = program.run("require", board, words, madd_iterations=2)["stages"][1]
    assert s1["status"] == "fail"
    assert s1["evidence"].endswith(
        "ioctl 0xc0046400 (32-bit (armhf) userspace): [Errno 22] Invalid argument"
    )
    assert "0xC0086400 from 64-bit" in s1["diagnosis"]


def test_s1_names_the_ioctl_of_an_arm64_userspace() -> None:
    from netroot.qpu import kernels, program

    words = {k.name: k.words for k in kernels.all_kernels().values()}
    doc = program.run("require", fake.FakeBoard("healthy", userspace_bits=64), words, 2)
    s1 = doc["stages"][1]
    assert s1["status"] == "pass"
    assert s1["evidence"].endswith("; ioctl 0xc0086400 (64-bit (arm64) userspace)")
    assert doc["summary"]["exit_code"] == 0
