"""FAKE boards for tests and `--qpu emulate`: a scripted firmware mailbox over the QPU emulator.

Nothing here touches a GPU. `FakeBoard(scenario)` is a Platform whose files, euid, mailbox
(`FakeMailbox`) and /dev/mem windows are scripted; in the "healthy" scenario the mailbox's
execute tag runs the kernel on netroot.qpu.emulator. Every other scenario scripts one failure
from QPU.md. Stdlib-only (bundled into the emulate-mode program).
"""

from __future__ import annotations

import errno
import struct
import time

from netroot.qpu import mailbox as mb
from netroot.qpu.bootconfig import BootConfig
from netroot.qpu.emulator import Machine, Memory, QpuState

QEMU_FIRMWARE_REVISION = 346337  # what QEMU's emulated raspi firmware reports
FAKE_FIRMWARE_REVISION = 0x65A1E7A1  # a plausible 2024 build time
V3D_PHYS = 0x3FC00000  # V3D registers on BCM2836/7 (bus 0x7EC00000)
V3D_IDENT0 = 0x02443356  # "V3D" + version 2
# IDENT1: VPMSZ 12 KB, HDRT 1, NSEM 16, TUPS 2, QUPS 4, NSLC 3, REV 1.
V3D_IDENT1 = 12 << 28 | 1 << 24 | 16 << 16 | 2 << 12 | 4 << 8 | 3 << 4 | 1
PI3B_REVISION = 0xA02082  # new-style: type 0x08 (3B), processor 2 (BCM2837), 1 GB, Sony UK
PI4B_REVISION = 0xC03111  # type 0x11 (4B), processor 3 (BCM2711)
DT_V3D_STATUS = "/proc/device-tree/soc/v3d@7ec00000/status"
DT_MODEL = "/proc/device-tree/model"

SCENARIOS = (
    "healthy", "not_a_pi", "no_vcio", "not_root", "vc4_owns_v3d", "gpu_mem_small",
    "enable_refused", "execute_timeout", "kernel_etimedout", "qemu", "devmem_eperm",
    "wrong_lanes", "no_dma_store", "pi4", "clock_idle",
)  # fmt: skip
# The property ioctl the Raspberry Pi kernel's vcio driver accepts from each kind of process
# (include/uapi/linux/.../vcio: _IOWR(100, 0, char *) built by that process's compiler).
KERNEL_ACCEPTS = {32: 0xC0046400, 64: 0xC0086400}
V3D_MAX_HZ, V3D_IDLE_HZ = 400_000_000, 250_000_000  # v3d_freq / v3d_freq_min of a Pi 3
# config.txt as each scenario's board would carry it: Bookworm's default for a 3B (vc4-kms-v3d
# on) where the kernel owns V3D, a netroot-managed one (overlay commented out) elsewhere.
BOOKWORM_CONFIG = """# For more options and information see
# http://rptl.io/configtxt
dtparam=audio=on
camera_auto_detect=1
display_auto_detect=1
auto_initramfs=1

# Enable DRM VC4 V3D driver
dtoverlay=vc4-kms-v3d
max_framebuffers=2
disable_fw_kms_setup=1
arm_64bit=1
disable_overscan=1
arm_boost=1

[cm4]
otg_mode=1

[all]
"""
MANAGED_CONFIG = (
    BOOKWORM_CONFIG.replace(
        "dtoverlay=vc4-kms-v3d", "#dtoverlay=vc4-kms-v3d  # disabled by netroot (QPU)"
    )
    + "# BEGIN netroot QPU\ngpu_mem={mem}\n# END netroot QPU\n"
)


class _LaneReversingMachine(Machine):
    """FAKE fault: the DMA store writes each row's lanes in reverse order."""

    def _dma_store(self, q: QpuState, bus: int) -> None:
        row = (q.vdw or 0) >> 7 & 0x7F
        self.vpm[row] = self.vpm[row][::-1]
        super()._dma_store(q, bus)


class _StoreDroppingMachine(Machine):
    """FAKE fault: DMA stores never reach memory."""

    def _dma_store(self, q: QpuState, bus: int) -> None:
        if q.vdw is None:
            super()._dma_store(q, bus)


class FakeWindow:
    """A 'physical memory' window over the fake's emulated memory."""

    def __init__(self, memory: Memory, phys: int, size: int) -> None:
        self.memory, self.phys = memory, phys
        memory.locate(phys, size)  # raise now if nothing is there

    def read_words(self, offset: int, count: int) -> list[int]:
        """Words from emulated memory."""
        return self.memory.read_words(self.phys + offset, count)

    def write_words(self, offset: int, words: list[int]) -> None:
        """Words into emulated memory."""
        self.memory.write_words(self.phys + offset, words)

    def read_bytes(self, offset: int, count: int) -> bytes:
        """Bytes from emulated memory."""
        buf, off = self.memory.locate(self.phys + offset, count)
        return bytes(buf[off : off + count])

    def write_bytes(self, offset: int, data: bytes | bytearray) -> None:
        """Bytes into emulated memory."""
        buf, off = self.memory.locate(self.phys + offset, len(data))
        buf[off : off + len(data)] = data

    def close(self) -> None:
        """Nothing to unmap."""


class FakeMailbox:
    """FAKE /dev/vcio + firmware: answers property buffers like the Pi would in `scenario`.

    Like the kernel driver, it refuses (EINVAL) a request number other than the one a process
    of the board's userspace (32 or 64 bits) builds.
    """

    def __init__(self, board: FakeBoard) -> None:
        self.board = board
        self.calls: list[int] = []  # tag ids, in order, for tests
        self.requests: list[int] = []  # ioctl numbers, in order, for tests

    def ioctl(self, request: int, buf: bytearray) -> None:
        """The driver's ioctl: check the number, then hand the buffer to the firmware."""
        self.requests.append(request)
        if request != KERNEL_ACCEPTS[self.board.userspace_bits]:
            raise OSError(errno.EINVAL, os_strerror(errno.EINVAL))
        self.property(buf)

    def property(self, buf: bytearray) -> None:
        """Answer every tag of `buf` in place."""
        count = len(buf) // 4
        words = list(struct.unpack(f"<{count}I", bytes(buf)))
        pos = 2
        while pos < count and words[pos] != 0:
            ident, room = words[pos], words[pos + 1] // 4
            values = words[pos + 3 : pos + 3 + room]
            self.calls.append(ident)
            reply = self.board.answer(ident, values)  # may raise OSError like the ioctl
            if reply is None:  # unknown to this firmware: QEMU-style empty answer
                words[pos + 2] = 0x80000000
            else:
                words[pos + 2] = 0x80000000 | 4 * len(reply)
                words[pos + 3 : pos + 3 + len(reply)] = reply
            pos += 3 + room
        words[1] = mb.REPLY_OK
        struct.pack_into(f"<{count}I", buf, 0, *words)

    def close(self) -> None:
        """Nothing to close."""


class FakeBoard:
    """FAKE Platform: a Raspberry Pi as `scenario` scripts it (see SCENARIOS)."""

    emulated = True  # the smoke program labels every result of a FakeBoard as emulated

    def __init__(
        self, scenario: str = "healthy", userspace_bits: int | None = None, pointer_bytes: int = 0
    ) -> None:
        """`userspace_bits`: the process kind the fake kernel sees (default: this interpreter's);
        `pointer_bytes`: what the smoke program believes it is (default: the same)."""
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown fake scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
        self.scenario = scenario
        self.userspace_bits = userspace_bits or 8 * struct.calcsize("P")
        if self.userspace_bits not in KERNEL_ACCEPTS:
            raise ValueError(f"userspace of {self.userspace_bits} bits: expected 32 or 64")
        self.pointer_bytes = pointer_bytes or self.userspace_bits // 8
        self.memory = Memory()
        machine = {"wrong_lanes": _LaneReversingMachine, "no_dma_store": _StoreDroppingMachine}
        self.machine = machine.get(scenario, Machine)(self.memory)
        self.v3d = self.memory.add_region(V3D_PHYS, 4096)
        struct.pack_into("<2I", self.v3d, 0, 0xDEADBEEF, 0xDEADBEEF)  # not powered yet
        gpu_mem = 16 if scenario == "gpu_mem_small" else 64
        self.vc_base, self.vc_size = 0x40000000 - (gpu_mem << 20), gpu_mem << 20
        self.next_phys = self.vc_base
        self.allocations: dict[int, tuple[int, int, int]] = {}  # handle -> (phys, size, flags)
        self.locked: set[int] = set()
        self.enabled = False
        self.executes = 0
        self.last_execute_reason = ""
        self.mailbox = FakeMailbox(self)

    # --- Platform ------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        """Scripted device nodes and sysfs entries."""
        if path == "/dev/vcio":
            return self.scenario not in ("not_a_pi", "no_vcio")
        if path == "/dev/mem":
            return True
        if path == "/sys/module/vc4":
            return self.scenario == "vc4_owns_v3d"
        return self.read_text(path) is not None

    def read_text(self, path: str) -> str | None:
        """Scripted device-tree strings."""
        if path == DT_MODEL:
            if self.scenario == "not_a_pi":
                return "linux,dummy-virt"
            return (
                "Raspberry Pi 4 Model B Rev 1.1"
                if self.scenario == "pi4"
                else ("Raspberry Pi 3 Model B Rev 1.2")
            )
        if path == DT_V3D_STATUS and self.scenario != "not_a_pi":
            return "okay" if self.scenario == "vc4_owns_v3d" else "disabled"
        return None

    def euid(self) -> int:
        """Root unless the scenario says otherwise."""
        return 1000 if self.scenario == "not_root" else 0

    def open_transport(self) -> mb.MailboxTransport:
        """The fake mailbox behind the real transport, or ENOENT like a missing /dev/vcio."""
        if not self.exists("/dev/vcio"):
            raise FileNotFoundError(errno.ENOENT, os_strerror(errno.ENOENT), "/dev/vcio")
        return mb.MailboxTransport(self.mailbox, self.pointer_bytes)

    def boot_config(self) -> BootConfig | None:
        """The scenario's config.txt; none on boards that are not Pis."""
        if self.scenario in ("not_a_pi", "qemu"):
            return None
        if self.scenario == "vc4_owns_v3d":
            return BootConfig("/boot/firmware/config.txt", BOOKWORM_CONFIG)
        mem = 16 if self.scenario == "gpu_mem_small" else 64
        return BootConfig("/boot/firmware/config.txt", MANAGED_CONFIG.format(mem=mem))

    def map_physical(self, phys: int, size: int) -> FakeWindow:
        """A window over emulated memory, or the scripted EPERM."""
        if self.scenario == "devmem_eperm":
            raise PermissionError(errno.EPERM, os_strerror(errno.EPERM), "/dev/mem")
        try:
            return FakeWindow(self.memory, phys, size)
        except Exception as exc:  # nothing mapped there in the fake
            raise OSError(errno.EFAULT, f"fake: no memory at 0x{phys:08x}: {exc}") from None

    def monotonic(self) -> float:
        """time.monotonic()."""
        return time.monotonic()

    # --- firmware ------------------------------------------------------------------------
    def answer(self, ident: int, values: list[int]) -> list[int] | None:
        """The scripted firmware's response words for one tag (None = empty reply)."""
        qemu = self.scenario == "qemu"
        if ident == mb.TAG_FIRMWARE_REVISION:
            return [QEMU_FIRMWARE_REVISION if qemu else FAKE_FIRMWARE_REVISION]
        if ident == mb.TAG_BOARD_REVISION:
            return [PI4B_REVISION if self.scenario == "pi4" else PI3B_REVISION]
        if ident == mb.TAG_BOARD_MODEL:
            return [0]
        if qemu:
            return None
        if ident == mb.TAG_FIRMWARE_VARIANT:
            return [1]
        if ident == mb.TAG_VC_MEMORY:
            return [self.vc_base, self.vc_size]
        if ident in (mb.TAG_CLOCK_RATE, mb.TAG_MAX_CLOCK_RATE):
            idle = self.scenario == "clock_idle" and ident == mb.TAG_CLOCK_RATE
            rate = V3D_IDLE_HZ if idle else V3D_MAX_HZ
            return [values[0], rate if values[0] == mb.CLOCK_V3D else 0]
        if ident == mb.TAG_TEMPERATURE:
            return [values[0], 48_300]
        if ident == mb.TAG_THROTTLED:
            return [0]
        if ident == mb.TAG_ENABLE_QPU:
            return [self._enable(bool(values[0]))]
        if ident == mb.TAG_ALLOCATE:
            return [self._allocate(*values[:3])]
        if ident in (mb.TAG_LOCK, mb.TAG_UNLOCK, mb.TAG_RELEASE):
            return [self._handle_op(ident, values[0])]
        if ident == mb.TAG_EXECUTE_QPU:
            return [self._execute(*values[:4])]
        return None

    def _enable(self, enable: bool) -> int:
        if enable and self.scenario in ("enable_refused", "vc4_owns_v3d"):
            return 0x80000000
        self.enabled = enable
        # Powered-off V3D registers read 0xdeadbeef (asurati's bare-metal QPU demos).
        ident = [V3D_IDENT0, V3D_IDENT1] if enable else [0xDEADBEEF, 0xDEADBEEF]
        struct.pack_into("<2I", self.v3d, 0, *ident)
        return 0

    def _allocate(self, size: int, align: int, flags: int) -> int:
        if self.scenario == "gpu_mem_small":
            return 0  # gpu_mem=16: the 3D block is disabled, allocations fail
        align = max(align, 4096)
        phys = -(-self.next_phys // align) * align
        if phys + size > self.vc_base + self.vc_size:
            return 0
        self.next_phys = phys + size
        handle = len(self.allocations) + 1
        self.allocations[handle] = (phys, size, flags)
        self.memory.add_region(phys, size)
        return handle

    def _handle_op(self, ident: int, handle: int) -> int:
        if handle not in self.allocations:
            return 0 if ident == mb.TAG_LOCK else 1
        phys, _, flags = self.allocations[handle]
        if ident == mb.TAG_LOCK:
            self.locked.add(handle)
            return (0xC0000000 if flags & mb.MEM_FLAG_DIRECT else 0x40000000) | phys
        if ident == mb.TAG_UNLOCK:
            self.locked.discard(handle)
            return 0
        self.memory.remove_region(phys)
        del self.allocations[handle]
        return 0

    def _execute(self, num_qpus: int, control: int, noflush: int, timeout_ms: int) -> int:
        if self.scenario == "kernel_etimedout":
            raise TimeoutError(errno.ETIMEDOUT, os_strerror(errno.ETIMEDOUT))
        if self.scenario == "execute_timeout" or not self.enabled:
            self.last_execute_reason = "scripted hang" if self.enabled else "QPUs not enabled"
            return mb.EXECUTE_TIMEOUT
        self.executes += 1
        # Budget: instructions the QPUs could issue in timeout_ms at 100 M/s each, capped so
        # a hung emulated kernel fails quickly.
        budget = min(timeout_ms * 100_000 * num_qpus, 3_000_000)
        result = self.machine.execute(num_qpus, control, budget)
        self.last_execute_reason = result.reason
        return 0 if result.completed else mb.EXECUTE_TIMEOUT


def os_strerror(code: int) -> str:
    """strerror, as the OSError the real call would raise carries it."""
    import os

    return os.strerror(code)
