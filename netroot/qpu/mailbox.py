"""The firmware mailbox property interface, its transports and the board's facts.

Property buffer (Raspberry Pi firmware wiki "Mailbox property interface"): 32-bit words
[total bytes, request code 0, (tag id, value-buffer bytes, request/response word, values...)*,
0 end tag], padded to 16 bytes. The firmware answers word 1 = 0x80000000 (0x80000001 = parse
error) and sets bit 31 of each tag's request/response word plus the response length. QEMU's
emulated firmware answers tags it does not know with bit 31 set and length 0: we check both.

`MailboxTransport` issues the property ioctl on a device: `_IOWR(100, 0, char *)`, whose size
field is the *calling process's* pointer size, so 0xC0046400 from a 32-bit (armhf) userspace
(also on a 64-bit kernel, through its compat path) and 0xC0086400 from a 64-bit (arm64) one; a
64-bit process sending the armhf number gets EINVAL. `VcioDevice` is the real `/dev/vcio`;
`LocalPlatform` is the real board (files, euid, `/dev/mem` maps). The fake ones for tests and
`--qpu emulate` live in netroot.qpu.fake. Stdlib-only (bundled).
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from dataclasses import dataclass
from typing import Protocol

from netroot.qpu.bootconfig import BootConfig

# Linux's _IOC encoding (asm-generic/ioctl.h): dir<<30 | size<<16 | type<<8 | nr.
_IOC_READ_WRITE = 3
MBOX_IOCTL_TYPE, MBOX_IOCTL_NR = 100, 0
REPLY_OK = 0x80000000
REPLY_PARSE_ERROR = 0x80000001

TAG_FIRMWARE_REVISION = 0x00000001
TAG_FIRMWARE_VARIANT = 0x00000002
TAG_BOARD_MODEL = 0x00010001
TAG_BOARD_REVISION = 0x00010002
TAG_VC_MEMORY = 0x00010006
TAG_CLOCK_RATE = 0x00030002
TAG_MAX_CLOCK_RATE = 0x00030004
TAG_TEMPERATURE = 0x00030006
TAG_ALLOCATE = 0x0003000C
TAG_LOCK = 0x0003000D
TAG_UNLOCK = 0x0003000E
TAG_RELEASE = 0x0003000F
TAG_EXECUTE_QPU = 0x00030011
TAG_ENABLE_QPU = 0x00030012
TAG_THROTTLED = 0x00030046

CLOCK_V3D = 5
MEM_FLAG_DIRECT = 0x4  # uncached 0xC0000000 alias (Pi 2/3)
EXECUTE_TIMEOUT = 0x80000000  # execute's reply when the QPUs did not finish in time
BUS_TO_PHYS = 0x3FFFFFFF


class PropertyError(Exception):
    """A property call failed; `kind` is parse-error, not-processed, unanswered or empty."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Tag:
    """One request tag: id, request values and how many response words to make room for."""

    ident: int
    values: tuple[int, ...] = ()
    response_words: int = 1


def encode(tags: list[Tag]) -> bytearray:
    """The property buffer for `tags` (request code 0, end tag, padded to 16 bytes)."""
    words = [0, 0]
    for tag in tags:
        room = max(len(tag.values), tag.response_words)
        words += [tag.ident, 4 * room, 0, *tag.values, *([0] * (room - len(tag.values)))]
    words.append(0)
    words += [0] * (-len(words) % 4)
    words[0] = 4 * len(words)
    return bytearray(struct.pack(f"<{len(words)}I", *words))


def decode(buf: bytes | bytearray, tags: list[Tag]) -> list[tuple[int, ...]]:
    """The response values of each tag of a buffer `encode(tags)` made and the firmware filled."""
    count = len(buf) // 4
    words = struct.unpack(f"<{count}I", bytes(buf[: 4 * count]))
    if words[1] == REPLY_PARSE_ERROR:
        raise PropertyError("parse-error", "the firmware could not parse the request (0x80000001)")
    if words[1] != REPLY_OK:
        raise PropertyError("not-processed", f"request not processed (code 0x{words[1]:08x})")
    out, pos = [], 2
    for tag in tags:
        ident, room, code = words[pos], words[pos + 1] // 4, words[pos + 2]
        if ident != tag.ident:
            raise PropertyError("parse-error", f"reply tag 0x{ident:08x} != 0x{tag.ident:08x}")
        if not code & 0x80000000:
            raise PropertyError("unanswered", f"tag 0x{tag.ident:08x} was not answered")
        length = code & 0x7FFFFFFF
        if length == 0 and tag.response_words:
            raise PropertyError(
                "empty",
                f"tag 0x{tag.ident:08x}: empty reply (bit 31 set, "
                "length 0), as QEMU's emulated firmware answers unknown tags",
            )
        out.append(tuple(words[pos + 3 : pos + 3 + min(room, (length + 3) // 4)]))
        pos += 3 + room
    return out


def property_ioctl(pointer_bytes: int) -> int:
    """The mailbox property ioctl, _IOWR(100, 0, char *), for a userspace with this pointer size."""
    if pointer_bytes not in (4, 8):
        raise ValueError(f"pointer size {pointer_bytes}: expected 4 (armhf) or 8 (arm64)")
    return _IOC_READ_WRITE << 30 | pointer_bytes << 16 | MBOX_IOCTL_TYPE << 8 | MBOX_IOCTL_NR


def userspace_name(pointer_bytes: int) -> str:
    """'32-bit (armhf)' or '64-bit (arm64)' userspace, for evidence lines."""
    return "64-bit (arm64)" if pointer_bytes == 8 else "32-bit (armhf)"


class Transport(Protocol):
    """Carries one property buffer to the firmware and back, in place (like the ioctl)."""

    @property
    def request(self) -> int:
        """The ioctl request number used."""

    def property(self, buf: bytearray) -> None:
        """Send `buf`, overwrite it with the reply; OSError as the ioctl raises it."""

    def close(self) -> None:
        """Release the device."""


class IoctlDevice(Protocol):
    """An open character device that takes ioctls with an in/out buffer."""

    def ioctl(self, request: int, buf: bytearray) -> None:
        """Run `request` on `buf` in place; OSError (e.g. EINVAL) as the kernel answers."""

    def close(self) -> None:
        """Close the device."""


class MailboxTransport:
    """The property ioctl on a device, numbered for the userspace that issues it."""

    def __init__(self, device: IoctlDevice, pointer_bytes: int) -> None:
        self.device = device
        self.pointer_bytes = pointer_bytes
        self._request = property_ioctl(pointer_bytes)

    @property
    def request(self) -> int:
        """_IOWR(100, 0, char *) for this userspace."""
        return self._request

    def property(self, buf: bytearray) -> None:
        """Run one property request in place."""
        self.device.ioctl(self._request, buf)

    def close(self) -> None:
        """Close the device."""
        self.device.close()


class PhysicalWindow(Protocol):
    """A mapping of physical memory (e.g. /dev/mem) read and written as 32-bit words."""

    def read_words(self, offset: int, count: int) -> list[int]:
        """`count` words at byte `offset` of the window."""

    def write_words(self, offset: int, words: list[int]) -> None:
        """Store `words` at byte `offset` of the window."""

    def read_bytes(self, offset: int, count: int) -> bytes:
        """`count` bytes at byte `offset` (bulk: operator data, not registers)."""

    def write_bytes(self, offset: int, data: bytes | bytearray) -> None:
        """Store `data` at byte `offset` (bulk: operator data, not registers)."""

    def close(self) -> None:
        """Unmap."""


class Platform(Protocol):
    """What the smoke stages may ask of a board; real (LocalPlatform) or scripted (FakeBoard)."""

    def exists(self, path: str) -> bool:
        """Whether `path` exists."""

    def read_text(self, path: str) -> str | None:
        """The file's text with NULs stripped, or None if it cannot be read."""

    def euid(self) -> int:
        """Effective user id of the smoke program."""

    def open_transport(self) -> Transport:
        """Open the mailbox device; OSError with the real errno if it cannot."""

    def boot_config(self) -> BootConfig | None:
        """The board's config.txt (read outside the chroot by the host), None if not found."""

    def map_physical(self, phys: int, size: int) -> PhysicalWindow:
        """Map `size` bytes of physical memory at `phys`; OSError with the real errno."""

    def monotonic(self) -> float:
        """Seconds from a monotonic clock."""


class Mailbox:
    """The property calls the smoke test makes, over any Transport."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def call(self, ident: int, *values: int, response_words: int = 1) -> tuple[int, ...]:
        """One tag round trip; PropertyError or OSError on failure."""
        tags = [Tag(ident, tuple(values), response_words)]
        buf = encode(tags)
        self.transport.property(buf)
        return decode(buf, tags)[0]

    def firmware_revision(self) -> int:
        """Firmware build time (seconds since 1970); QEMU answers 346337."""
        return self.call(TAG_FIRMWARE_REVISION)[0]

    def firmware_variant(self) -> int:
        """Firmware variant (newer firmware only)."""
        return self.call(TAG_FIRMWARE_VARIANT)[0]

    def board_revision(self) -> int:
        """Board revision code (new-style: type in bits 4-11, processor in bits 12-15)."""
        return self.call(TAG_BOARD_REVISION)[0]

    def vc_memory(self) -> tuple[int, int]:
        """(base, size) of the VideoCore's memory split (gpu_mem)."""
        base, size = self.call(TAG_VC_MEMORY, response_words=2)[:2]
        return base, size

    def clock_rate(self, clock: int = CLOCK_V3D) -> int:
        """Clock rate in Hz (V3D is clock 5)."""
        return self.call(TAG_CLOCK_RATE, clock, response_words=2)[1]

    def max_clock_rate(self, clock: int = CLOCK_V3D) -> int:
        """The highest rate the firmware may set for the clock (v3d_freq), in Hz."""
        return self.call(TAG_MAX_CLOCK_RATE, clock, response_words=2)[1]

    def temperature(self) -> int:
        """SoC temperature in thousandths of a degree C."""
        return self.call(TAG_TEMPERATURE, 0, response_words=2)[1]

    def throttled(self) -> int:
        """Throttling flags (bit 0 under-voltage, 1 ARM capped, 2 throttled, 3 soft temp)."""
        return self.call(TAG_THROTTLED, 0)[0]

    def allocate(self, size: int, align: int, flags: int) -> int:
        """A GPU memory handle; 0 means the firmware could not allocate."""
        return self.call(TAG_ALLOCATE, size, align, flags)[0]

    def lock(self, handle: int) -> int:
        """Bus address of the locked allocation (0 on failure)."""
        return self.call(TAG_LOCK, handle)[0]

    def unlock(self, handle: int) -> int:
        """0 on success."""
        return self.call(TAG_UNLOCK, handle)[0]

    def release(self, handle: int) -> int:
        """0 on success."""
        return self.call(TAG_RELEASE, handle)[0]

    def enable_qpu(self, enable: bool) -> int:
        """0 on success."""
        return self.call(TAG_ENABLE_QPU, int(enable))[0]

    def execute_qpu(self, num_qpus: int, control_bus: int, noflush: bool, timeout_ms: int) -> int:
        """0 when every program finished, EXECUTE_TIMEOUT when they did not in time."""
        return self.call(TAG_EXECUTE_QPU, num_qpus, control_bus, int(noflush), timeout_ms)[0]


class VcioDevice:
    """The real mailbox device, /dev/vcio."""

    def __init__(self, path: str = "/dev/vcio") -> None:
        self.fd = os.open(path, os.O_RDONLY)

    def ioctl(self, request: int, buf: bytearray) -> None:
        """ioctl(2) with `buf` updated in place."""
        import fcntl  # POSIX-only; imported here so the module loads anywhere

        fcntl.ioctl(self.fd, request, buf, True)

    def close(self) -> None:
        """Close /dev/vcio."""
        os.close(self.fd)


class DevMemWindow:
    """A MAP_SHARED mapping of /dev/mem (opened O_SYNC) at a physical address."""

    def __init__(self, phys: int, size: int, path: str = "/dev/mem") -> None:
        page = mmap.PAGESIZE
        self.delta = phys % page
        fd = os.open(path, os.O_RDWR | os.O_SYNC)
        try:
            length = -(-(size + self.delta) // page) * page
            self.map = mmap.mmap(
                fd,
                length,
                mmap.MAP_SHARED,
                mmap.PROT_READ | mmap.PROT_WRITE,
                offset=phys - self.delta,
            )
        finally:
            os.close(fd)

    def read_words(self, offset: int, count: int) -> list[int]:
        """Words read one by one (device memory: no wide copies)."""
        start = self.delta + offset
        return [struct.unpack_from("<I", self.map, start + 4 * i)[0] for i in range(count)]

    def write_words(self, offset: int, words: list[int]) -> None:
        """Words written one by one."""
        start = self.delta + offset
        for i, word in enumerate(words):
            struct.pack_into("<I", self.map, start + 4 * i, word)

    # Operator data is SDRAM behind the uncached alias, not registers: copied in bulk, as
    # py-videocore and hello_fft copy their buffers into the same kind of mapping.
    def read_bytes(self, offset: int, count: int) -> bytes:
        """A bulk copy out of the mapping."""
        start = self.delta + offset
        return self.map[start : start + count]

    def write_bytes(self, offset: int, data: bytes | bytearray) -> None:
        """A bulk copy into the mapping."""
        start = self.delta + offset
        self.map[start : start + len(data)] = data

    def close(self) -> None:
        """Unmap."""
        self.map.close()


class LocalPlatform:
    """The board the program runs on; `config` is its config.txt as the host read it."""

    def __init__(self, config: BootConfig | None = None) -> None:
        self.config = config

    def exists(self, path: str) -> bool:
        """os.path.exists."""
        return os.path.exists(path)

    def read_text(self, path: str) -> str | None:
        """Text without NULs (device-tree strings end in NUL), None if unreadable."""
        try:
            with open(path, "rb") as handle:
                return handle.read().replace(b"\0", b"").decode("utf-8", "replace").strip()
        except OSError:
            return None

    def euid(self) -> int:
        """os.geteuid()."""
        return os.geteuid()

    def open_transport(self) -> Transport:
        """Open /dev/vcio; the ioctl is numbered for this interpreter's pointer size."""
        return MailboxTransport(VcioDevice(), struct.calcsize("P"))

    def boot_config(self) -> BootConfig | None:
        """What the host passed in."""
        return self.config

    def map_physical(self, phys: int, size: int) -> PhysicalWindow:
        """Map /dev/mem."""
        return DevMemWindow(phys, size)

    def monotonic(self) -> float:
        """time.monotonic()."""
        return time.monotonic()
