"""The smoke kernels' memory layout and uniforms; VPM/DMA setup words of every kernel (pure).

Setup-word formats are the Reference Guide's VPM and VCD sections ("VPM Generic Block
Read/Write Setup", "VCD DMA Load (VDR) Basic Setup", "VCD DMA Store (VDW) Basic Setup");
cross-checked with py-videocore's setup_* helpers and QPULib's Target/LoadStore.cpp.
This module is bundled into the board-side smoke program, so it imports nothing of ours.
"""

from __future__ import annotations

NUM_QPUS = 12
LANES = 16
SENTINEL = 0xDEADBEEF  # pre-filled into outputs: still there afterwards = no DMA store

# One allocation holds everything; offsets in bytes.
KERNEL_SLOT_BYTES = 2048  # 256 instructions per kernel
CODE_OFFSETS = {"vector_add": 0, "madd_loop": 2048}
CONTROL_OFFSET = 8192  # NUM_QPUS pairs {uniforms bus address, code bus address}
UNIFORMS_OFFSET = 8192 + 256
UNIFORM_SLOT_BYTES = 64  # up to 16 uniforms per QPU
INPUT_OFFSET = 12288
INPUT_SLOT_BYTES = 2 * LANES * 4  # vector A then vector B, 16 words each
OUTPUT_OFFSET = 16384
OUTPUT_SLOT_BYTES = LANES * 4
ALLOC_BYTES = 32768

# The madd loop: K unrolled fadd+fmul pairs, then sub+fmul, branch, 3 delay slots (fadd+fmul).
MADD_UNROLL = 16
MADD_ADDS_PER_ITERATION = MADD_UNROLL + 3  # r0 += 1.0 this many times per iteration
MADD_FLOPS_PER_ITERATION = LANES * (2 * MADD_UNROLL + 1 + 2 * 3)
MADD_INSTRUCTIONS_PER_ITERATION = MADD_UNROLL + 5


class LayoutError(ValueError):
    """A setup-word field is out of range; the message names the field."""


def _check(name: str, value: int, bits: int) -> int:
    if not 0 <= value < (1 << bits):
        raise LayoutError(f"setup field {name}={value} does not fit in {bits} bits")
    return value


def _count(name: str, value: int, maximum: int) -> int:
    # Counts 1..maximum; the maximum is encoded as 0.
    if not 1 <= value <= maximum:
        raise LayoutError(f"setup field {name}={value} outside 1..{maximum}")
    return value % maximum


def vpm_read_setup(
    *, num: int, stride: int, horizontal: bool, laned: bool, size: int, addr: int
) -> int:
    """VPM generic block read setup (ID 00): NUM 23:20 (0=16), STRIDE 17:12, HORIZ 11,
    LANED 10, SIZE 9:8 (2 = 32-bit), ADDR 7:0."""
    return (
        _count("num", num, 16) << 20
        | _count("stride", stride, 64) << 12
        | int(horizontal) << 11
        | int(laned) << 10
        | _check("size", size, 2) << 8
        | _check("addr", addr, 8)
    )


def vpm_write_setup(*, stride: int, horizontal: bool, laned: bool, size: int, addr: int) -> int:
    """VPM generic block write setup (ID 00): bits 23:20 unused (0), else as the read setup."""
    return vpm_read_setup(
        num=16, stride=stride, horizontal=horizontal, laned=laned, size=size, addr=addr
    )


def vdr_setup(
    *, modew: int, mpitch: int, rowlen: int, nrows: int, vpitch: int, vertical: bool, y: int, x: int
) -> int:
    """DMA load (VDR) basic setup (ID bit 31 = 1): MODEW 30:28, MPITCH 27:24 (8*2^n bytes),
    ROWLEN 23:20 (0=16), NROWS 19:16 (0=16), VPITCH 15:12 (0=16), VERT 11, ADDRY 10:4, ADDRX 3:0."""
    return (
        1 << 31
        | _check("modew", modew, 3) << 28
        | _check("mpitch", mpitch, 4) << 24
        | _count("rowlen", rowlen, 16) << 20
        | _count("nrows", nrows, 16) << 16
        | _count("vpitch", vpitch, 16) << 12
        | int(vertical) << 11
        | _check("y", y, 7) << 4
        | _check("x", x, 4)
    )


def vdw_setup(
    *, units: int, depth: int, laned: bool, horizontal: bool, y: int, x: int, modew: int
) -> int:
    """DMA store (VDW) basic setup (ID 31:30 = 10): UNITS 29:23 (0=128), DEPTH 22:16 (0=128),
    LANED 15, HORIZ 14, VPMBASE 13:3 (ADDRY 13:7, ADDRX 6:3 for 32-bit), MODEW 2:0."""
    return (
        2 << 30
        | _count("units", units, 128) << 23
        | _count("depth", depth, 128) << 16
        | int(laned) << 15
        | int(horizontal) << 14
        | _check("y", y, 7) << 7
        | _check("x", x, 4) << 3
        | _check("modew", modew, 3)
    )


def vdw_stride_setup(*, blockmode: bool, stride: int) -> int:
    """DMA store stride setup (ID 31:30 = 11): BLOCKMODE 16, STRIDE 12:0 (bytes between rows)."""
    return 3 << 30 | int(blockmode) << 16 | _check("stride", stride, 13)


def vpm_row(qpu: int) -> int:
    """First of the two VPM rows QPU number `qpu` (0-based launch index) uses."""
    if not 0 <= qpu < NUM_QPUS:
        raise LayoutError(f"qpu index {qpu} outside 0..{NUM_QPUS - 1}")
    return 2 * qpu


def barrier_uniforms(qpu: int, num_qpus: int) -> list[int]:
    """The 2 uniforms every kernel's closing barrier reads (kernels._barrier_and_end): launch
    index 0 is the master; it waits for num_qpus-1 semaphore ups, then interrupts the host."""
    return [0, num_qpus - 1] if qpu == 0 else [1, 0]


# The setups every kernel uses (smoke and operator kernels alike): rows of 16 32-bit words,
# horizontal, not laned, starting at the QPU's own VPM rows (vpm_row).
def row_vdr(rows: int, vpm_row: int) -> int:
    """DMA load of `rows` consecutive rows of memory into the VPM from `vpm_row` on."""
    return vdr_setup(
        modew=0, mpitch=3, rowlen=16, nrows=rows, vpitch=1, vertical=False, y=vpm_row, x=0
    )


def row_vpm_read(vpm_row: int) -> int:
    """Two VPM reads, of `vpm_row` and the row after it."""
    return vpm_read_setup(num=2, stride=1, horizontal=True, laned=False, size=2, addr=vpm_row)


def row_vpm_write(vpm_row: int) -> int:
    """VPM writes from `vpm_row` on."""
    return vpm_write_setup(stride=1, horizontal=True, laned=False, size=2, addr=vpm_row)


def row_vdw(vpm_row: int) -> int:
    """DMA store of the VPM row `vpm_row` to memory."""
    return vdw_setup(units=1, depth=16, laned=False, horizontal=True, y=vpm_row, x=0, modew=0)


def vector_add_uniforms(qpu: int, num_qpus: int, in_bus: int, out_bus: int) -> list[int]:
    """The 8 uniforms the vector-add kernel reads, in order (see kernels.vector_add)."""
    row = vpm_row(qpu)
    return [
        row_vdr(2, row),
        in_bus,
        row_vpm_read(row),
        row_vpm_write(row),
        row_vdw(row),
        out_bus,
        *barrier_uniforms(qpu, num_qpus),
    ]


def madd_uniforms(qpu: int, num_qpus: int, iterations: int, out_bus: int) -> list[int]:
    """The 6 uniforms the multiply-add loop kernel reads, in order (see kernels.madd_loop)."""
    if not 1 <= iterations < (1 << 31):
        raise LayoutError(f"iterations={iterations} outside 1..2^31-1")
    row = vpm_row(qpu)
    return [
        iterations,
        row_vpm_write(row),
        row_vdw(row),
        out_bus,
        *barrier_uniforms(qpu, num_qpus),
    ]


def uniforms_bus(base_bus: int, qpu: int) -> int:
    """Bus address of QPU `qpu`'s uniforms inside the allocation at `base_bus`."""
    return base_bus + UNIFORMS_OFFSET + qpu * UNIFORM_SLOT_BYTES


def input_bus(base_bus: int, qpu: int) -> int:
    """Bus address of QPU `qpu`'s input pair (A then B)."""
    return base_bus + INPUT_OFFSET + qpu * INPUT_SLOT_BYTES


def output_bus(base_bus: int, qpu: int) -> int:
    """Bus address of QPU `qpu`'s 16-word output."""
    return base_bus + OUTPUT_OFFSET + qpu * OUTPUT_SLOT_BYTES
