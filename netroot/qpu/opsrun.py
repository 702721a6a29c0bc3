"""Run netroot's operator kernels (netroot.qpu.opkernels) through the firmware mailbox.

`QpuOps` owns one GPU allocation for its lifetime: the kernels' code, a control block, the
uniforms and a data area the operators' inputs are copied into and results out of. Work larger
than the data area runs as several executes, each well under the kernel's ~1 s mailbox
timeout. The same code drives a real Pi 3B (mailbox.LocalPlatform) and the FAKE board whose
firmware runs the kernels on netroot's emulator (fake.FakeBoard); `emulated` says which.
Stdlib-only (bundled into the board-side programs).
"""

from __future__ import annotations

from collections.abc import Callable

from netroot.qpu import layout as L
from netroot.qpu import mailbox as mb

ALLOC_BYTES = 4 << 20  # fits gpu_mem=64 with room for the firmware's own use
CODE_SLOT_BYTES = 2048  # 256 instructions per kernel
KERNEL_ORDER = ("ew_fadd", "ew_fmul", "ew_add", "ew_imul", "matvec")
CONTROL_OFFSET = 16384  # NUM_QPUS {uniforms, code} pairs
UNIFORMS_OFFSET = CONTROL_OFFSET + 256
UNIFORM_SLOT_BYTES = 64  # 16 uniforms per QPU
DATA_OFFSET = 20480
DATA_BYTES = ALLOC_BYTES - DATA_OFFSET
ROW_BYTES = 64  # one 16-lane vector
PAIR_BYTES = 2 * ROW_BYTES
TIMEOUT_MS = 800  # the kernel's mailbox gives up after about 1 s: stay under it
EW_VECTORS_PER_EXECUTE = DATA_BYTES // (PAIR_BYTES + ROW_BYTES)


class QpuError(RuntimeError):
    """The QPU could not run an operator; the message says which step failed and what to do."""


def elementwise_uniforms(
    qpu: int, num_qpus: int, vectors: int, pairs_bus: int, out_bus: int
) -> list[int]:
    """The uniforms of opkernels.elementwise for launch index `qpu`."""
    row = L.vpm_row(qpu)
    return [
        vectors,
        pairs_bus,
        out_bus,
        L.row_vdr(2, row),
        L.row_vpm_read(row),
        L.row_vpm_write(row),
        L.row_vdw(row),
        PAIR_BYTES,
        ROW_BYTES,
        24,
        *L.barrier_uniforms(qpu, num_qpus),
    ]


def matvec_uniforms(
    qpu: int, num_qpus: int, rows: int, chunks: int, in_bus: int, weight_bus: int, out_bus: int
) -> list[int]:
    """The uniforms of opkernels.matvec for launch index `qpu`."""
    row = L.vpm_row(qpu)
    return [
        rows,
        chunks,
        in_bus,
        weight_bus,
        out_bus,
        L.row_vdr(1, row),
        L.row_vdr(1, row + 1),
        L.row_vpm_read(row),
        L.row_vpm_write(row),
        L.row_vdw(row),
        ROW_BYTES,
        *L.barrier_uniforms(qpu, num_qpus),
    ]


def split(total: int, parts: int) -> list[int]:
    """`total` items over at most `parts` workers, each non-empty, sizes differing by <= 1."""
    parts = min(parts, total)
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]


class QpuOps:
    """The QPUs, enabled, with one allocation holding the operator kernels."""

    def __init__(
        self, platform: mb.Platform, kernels: dict[str, tuple[int, ...]], emulated: bool
    ) -> None:
        missing = [k for k in KERNEL_ORDER if k not in kernels]
        if missing:
            raise QpuError(f"kernels {', '.join(missing)} missing from the program")
        self.platform, self.kernels, self.emulated = platform, kernels, emulated
        self.transport: mb.Transport | None = None
        self.box: mb.Mailbox | None = None
        self.enabled = False
        self.handle = 0
        self.bus = 0
        self.window: mb.PhysicalWindow | None = None
        self.executes = 0

    def __enter__(self) -> QpuOps:
        self.open()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Enable the QPUs, allocate, lock and map GPU memory, copy the kernels in."""
        try:
            self.transport = self.platform.open_transport()
        except OSError as exc:
            raise QpuError(
                f"cannot open the mailbox (/dev/vcio): [Errno {exc.errno}] {exc.strerror}: "
                "not a Raspberry Pi with a VideoCore IV, or not root; `netroot smoke BOARD "
                "--qpu require` diagnoses it"
            ) from None
        try:
            self._open_memory(mb.Mailbox(self.transport))
        except mb.PropertyError as exc:
            self.close()
            raise QpuError(f"the firmware mailbox failed: {exc}") from None
        except QpuError:
            self.close()
            raise

    def _open_memory(self, box: mb.Mailbox) -> None:
        self.box = box
        reply = box.enable_qpu(True)
        if reply != 0:
            raise QpuError(
                f"the firmware refused to enable the QPUs (reply 0x{reply:08x}): the kernel's "
                "vc4 driver owns V3D; `netroot smoke BOARD --qpu require` names the fix"
            )
        self.enabled = True
        self.handle = box.allocate(ALLOC_BYTES, 4096, mb.MEM_FLAG_DIRECT)
        if self.handle == 0:
            raise QpuError(
                f"the firmware could not allocate {ALLOC_BYTES >> 20} MiB of GPU memory: "
                "raise gpu_mem in the board's config.txt (64 or more) and reboot"
            )
        self.bus = box.lock(self.handle)
        if self.bus == 0:
            raise QpuError(f"lock of GPU memory handle {self.handle} returned bus address 0")
        try:
            self.window = self.platform.map_physical(self.bus & mb.BUS_TO_PHYS, ALLOC_BYTES)
        except OSError as exc:
            raise QpuError(
                f"cannot map GPU memory through /dev/mem: [Errno {exc.errno}] {exc.strerror}"
            ) from None
        for slot, name in enumerate(KERNEL_ORDER):
            words = self.kernels[name]
            if len(words) * 8 > CODE_SLOT_BYTES:
                raise QpuError(f"kernel {name} has {len(words)} instructions, over 256")
            halves = [h for w in words for h in (w & 0xFFFFFFFF, w >> 32)]
            self.window.write_words(slot * CODE_SLOT_BYTES, halves)

    def close(self) -> None:
        """Unmap, unlock, release, disable, close: each attempted whatever the others did."""
        errors = []
        steps: list[tuple[str, Callable[[], object]]] = []
        if self.window is not None:
            steps.append(("unmap", self.window.close))
        box = self.box
        if box is not None and self.handle:
            handle = self.handle
            steps += [
                ("unlock", lambda: box.unlock(handle)),
                ("release", lambda: box.release(handle)),
            ]
        if box is not None and self.enabled:
            steps.append(("disable", lambda: box.enable_qpu(False)))
        if self.transport is not None:
            steps.append(("close /dev/vcio", self.transport.close))
        for label, step in steps:
            try:
                step()
            except Exception as exc:  # every step is tried; the first failures are reported
                errors.append(f"{label}: {exc}")
        self.window, self.box, self.transport = None, None, None
        self.enabled, self.handle, self.bus = False, 0, 0
        if errors:
            raise QpuError("cleanup failed: " + "; ".join(errors) + " (reboot the board)")

    def _window(self) -> mb.PhysicalWindow:
        if self.window is None or self.box is None:
            raise QpuError("the QPUs are not open")
        return self.window

    def _launch(self, kernel: str, uniforms: list[list[int]]) -> None:
        window, box = self._window(), self.box
        assert box is not None  # _window checked it
        code = self.bus + KERNEL_ORDER.index(kernel) * CODE_SLOT_BYTES
        control = []
        for q, words in enumerate(uniforms):
            window.write_words(UNIFORMS_OFFSET + q * UNIFORM_SLOT_BYTES, words)
            control += [self.bus + UNIFORMS_OFFSET + q * UNIFORM_SLOT_BYTES, code]
        window.write_words(CONTROL_OFFSET, control)
        try:
            reply = box.execute_qpu(len(uniforms), self.bus + CONTROL_OFFSET, False, TIMEOUT_MS)
        except OSError as exc:
            raise QpuError(
                f"execute of {kernel} failed: [Errno {exc.errno}] {exc.strerror}: the "
                "firmware mailbox is stuck; reboot the board"
            ) from None
        if reply != 0:
            why = getattr(self.platform, "last_execute_reason", "")
            raise QpuError(
                f"{kernel} on {len(uniforms)} QPUs did not finish within {TIMEOUT_MS} ms "
                f"(reply 0x{reply:08x}{': ' + why if why else ''}); a hung QPU needs a reboot"
            )
        self.executes += 1

    def elementwise(self, kernel: str, pairs: bytes | bytearray, vectors: int) -> bytes:
        """Run `kernel` over `vectors` interleaved (A row, B row) pairs; the result rows."""
        if len(pairs) != vectors * PAIR_BYTES:
            raise QpuError(f"{len(pairs)} bytes of input for {vectors} vector pairs")
        window, out = self._window(), bytearray()
        for start in range(0, vectors, EW_VECTORS_PER_EXECUTE):
            count = min(EW_VECTORS_PER_EXECUTE, vectors - start)
            window.write_bytes(
                DATA_OFFSET, pairs[start * PAIR_BYTES : (start + count) * PAIR_BYTES]
            )
            out_offset = DATA_OFFSET + count * PAIR_BYTES
            uniforms, first = [], 0
            sizes = split(count, L.NUM_QPUS)
            for q, size in enumerate(sizes):
                pairs_bus = self.bus + DATA_OFFSET + first * PAIR_BYTES
                out_bus = self.bus + out_offset + first * ROW_BYTES
                uniforms.append(elementwise_uniforms(q, len(sizes), size, pairs_bus, out_bus))
                first += size
            self._launch(kernel, uniforms)
            out += window.read_bytes(out_offset, count * ROW_BYTES)
        return bytes(out)

    def matvec(
        self, rows: bytes | bytearray, weight: bytes | bytearray, height: int, chunks: int
    ) -> bytes:
        """16 partial sums (one row) per input row; rows and weight padded to `chunks` x 16."""
        row_bytes = chunks * ROW_BYTES
        if len(rows) != height * row_bytes or len(weight) != row_bytes:
            raise QpuError(
                f"matvec input of {len(rows)} bytes for {height} rows of {chunks} chunks"
            )
        per_execute = (DATA_BYTES - row_bytes) // (row_bytes + ROW_BYTES)
        if per_execute < 1:
            limit = (DATA_BYTES - ROW_BYTES) // (2 * ROW_BYTES) * 16
            raise QpuError(
                f"matvec width {chunks * 16} does not fit in GPU memory: at most {limit}"
            )
        window, out = self._window(), bytearray()
        window.write_bytes(DATA_OFFSET, weight)
        in_offset = DATA_OFFSET + row_bytes
        for start in range(0, height, per_execute):
            count = min(per_execute, height - start)
            window.write_bytes(in_offset, rows[start * row_bytes : (start + count) * row_bytes])
            out_offset = in_offset + count * row_bytes
            uniforms, first = [], 0
            sizes = split(count, L.NUM_QPUS)
            for q, size in enumerate(sizes):
                uniforms.append(
                    matvec_uniforms(
                        q,
                        len(sizes),
                        size,
                        chunks,
                        self.bus + in_offset + first * row_bytes,
                        self.bus + DATA_OFFSET,
                        self.bus + out_offset + first * ROW_BYTES,
                    )
                )
                first += size
            self._launch("matvec", uniforms)
            out += window.read_bytes(out_offset, count * ROW_BYTES)
        return bytes(out)


def open_platform(mode: str) -> tuple[mb.Platform, bool]:
    """(platform, emulated) for `mode`: "hardware" is this board's mailbox; "emulate" is the
    FAKE Pi 3B whose firmware runs the kernels on netroot's emulator (needs the emulate
    modules in the program)."""
    if mode == "hardware":
        return mb.LocalPlatform(), False
    if mode == "emulate":
        from netroot.qpu.fake import FakeBoard  # only programs that emulate carry it

        return FakeBoard("healthy"), True
    raise QpuError(f"QPU mode {mode!r}: expected 'hardware' or 'emulate'")
