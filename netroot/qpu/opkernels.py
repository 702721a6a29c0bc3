"""The kernels behind netroot's torch operators, hand-assembled with netroot.qpu.asm.

Elementwise (`ew_fadd`, `ew_fmul`, `ew_add`, `ew_imul`): the host lays A and B out as
interleaved 16-word rows (A0 B0 A1 B1 ...), so one DMA load of two rows brings a pair into the
QPU's two VPM rows; the result row goes back by one DMA store. Each QPU walks its own
contiguous run of pairs. An int32 multiply is Mesa vc4's `ntq_umul` sequence: the QPU's only
integer multiply, mul24, keeps the low 32 bits of a 24 x 24-bit product, so
a*b mod 2^32 = mul24(a, b) + ((mul24(a >> 24, b) + mul24(a, b >> 24)) << 24).

`matvec`: each QPU takes a contiguous run of rows of the input (rows padded to whole 16-float
chunks) and, per row, multiplies it chunk by chunk with the weight vector, accumulating 16
partial sums in r3 that it stores as one row; the host adds the 16 up (the seed's scheme).

Uniform order and register use are documented per kernel; netroot.qpu.opsrun builds the
uniforms. Every kernel ends with the smoke kernels' semaphore barrier.
"""

from __future__ import annotations

from netroot.qpu import asm
from netroot.qpu.kernels import (
    Kernel,
    _barrier_and_end,
    add_op,
    mov_from_a,
    mov_from_acc,
    mov_from_b,
    mov_small_imm,
    mul_op,
    nop,
)

ELEMENTWISE = ("ew_fadd", "ew_fmul", "ew_add", "ew_imul")
ELEMENTWISE_UNIFORMS = 10  # + 2 barrier
MATVEC_UNIFORMS = 11  # + 2 barrier


def _inc(reg_a: int, by_b: int) -> int:
    """ra[reg_a] += rb[by_b] (integer)."""
    return add_op("add", reg_a, asm.MUX_A, asm.MUX_B, raddr_a=reg_a, raddr_b=by_b)


def _count_down(reg_a: int) -> int:
    """ra[reg_a] -= 1, setting Z (zero when the count runs out)."""
    return add_op(
        "sub",
        reg_a,
        asm.MUX_A,
        asm.MUX_B,
        raddr_a=reg_a,
        raddr_b=asm.small_imm_code(1),
        sf=True,
        sig=asm.SIG_SMALL_IMM,
    )


def _loop_back(prog: asm.Program, label: str) -> None:
    prog.branch_to(label, "allnz")
    for _ in range(3):
        prog.emit(nop())


def _op_into_vpm(prog: asm.Program, op: str) -> None:
    """r0 (A) op r1 (B) -> VPM write; r2, r3 scratch; rb6 holds 24 for the int multiply."""
    if op == "ew_fadd":
        prog.emit(add_op("fadd", asm.W_VPM, asm.MUX_R0, asm.MUX_R1))
    elif op == "ew_add":
        prog.emit(add_op("add", asm.W_VPM, asm.MUX_R0, asm.MUX_R1))
    elif op == "ew_fmul":
        prog.emit(mul_op("fmul", asm.W_VPM, asm.MUX_R0, asm.MUX_R1))
    else:  # ew_imul: low 32 bits of the product from three mul24 (see the module docstring)
        prog.emit(mul_op("mul24", asm.W_R2, asm.MUX_R0, asm.MUX_R1))  # r2 = a_lo * b_lo
        prog.emit(add_op("shr", asm.W_R3, asm.MUX_R0, asm.MUX_B, raddr_b=6))  # r3 = a >> 24
        prog.emit(mul_op("mul24", asm.W_R3, asm.MUX_R3, asm.MUX_R1))  # r3 = a_hi * b_lo
        prog.emit(add_op("shr", asm.W_R1, asm.MUX_R1, asm.MUX_B, raddr_b=6))  # r1 = b >> 24
        prog.emit(mul_op("mul24", asm.W_R1, asm.MUX_R0, asm.MUX_R1))  # r1 = a_lo * b_hi
        prog.emit(add_op("add", asm.W_R3, asm.MUX_R3, asm.MUX_R1))
        prog.emit(add_op("shl", asm.W_R3, asm.MUX_R3, asm.MUX_B, raddr_b=6))
        prog.emit(add_op("add", asm.W_VPM, asm.MUX_R2, asm.MUX_R3))


def elementwise(op: str) -> Kernel:
    """C = A op B over 16-lane vectors. Uniforms: u0 vectors (>= 1), u1 pairs bus address,
    u2 output bus address, u3 DMA load setup (2 rows), u4 VPM read setup, u5 VPM write setup,
    u6 DMA store setup, u7 128 (pair stride), u8 64 (row stride), u9 24, then the barrier's 2.
    Registers: ra0 count, ra1 pairs address, ra2 output address; rb0-rb3 setups, rb4 128,
    rb5 64, rb6 24."""
    if op not in ELEMENTWISE:
        raise ValueError(f"unknown elementwise kernel {op!r}; one of {', '.join(ELEMENTWISE)}")
    prog = asm.Program()
    for reg in range(3):
        prog.emit(mov_from_a(reg, asm.R_UNIFORM))  # ra0, ra1, ra2
    for reg in range(7):
        prog.emit(mov_from_a(reg, asm.R_UNIFORM, ws=True))  # rb0..rb6
    prog.label("loop")
    prog.emit(mov_from_a(asm.W_NOP, asm.R_MUTEX))
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 0))  # DMA load setup
    prog.emit(mov_from_a(asm.W_DMA_ADDR, 1))  # start the load of the pair
    prog.emit(mov_from_a(asm.W_NOP, asm.R_VDR_WAIT))
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 1))  # VPM read setup, 2 rows
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 2, ws=True))  # VPM write setup
    prog.emit(mov_from_a(asm.W_R0, asm.R_VPM))
    prog.emit(mov_from_a(asm.W_R1, asm.R_VPM))
    _op_into_vpm(prog, op)
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 3, ws=True))  # DMA store setup
    prog.emit(mov_from_a(asm.W_DMA_ADDR, 2, ws=True))  # start the store
    prog.emit(mov_from_b(asm.W_NOP, asm.R_VDW_WAIT))
    prog.emit(mov_from_a(asm.W_MUTEX, asm.R_NOP))
    prog.emit(_inc(1, 4))
    prog.emit(_inc(2, 5))
    prog.emit(_count_down(0))
    _loop_back(prog, "loop")
    _barrier_and_end(prog)
    return Kernel(op, tuple(prog.words()), ELEMENTWISE_UNIFORMS + 2)


def matvec() -> Kernel:
    """16 partial sums per input row of row . weight. Uniforms: u0 rows (>= 1), u1 chunks per
    row (>= 1), u2 input bus address (first row), u3 weight bus address, u4 output bus address,
    u5 DMA load setup into the first VPM row, u6 into the second, u7 VPM read setup (2 rows),
    u8 VPM write setup, u9 DMA store setup, u10 64, then the barrier's 2.
    Registers: ra0 rows left, ra1 input address, ra2 weight address, ra3 output address,
    ra4 chunks left; rb0 chunks, rb1 weight base, rb2-rb6 setups, rb7 64; r3 the sums."""
    prog = asm.Program()
    prog.emit(mov_from_a(0, asm.R_UNIFORM))  # ra0 rows
    prog.emit(mov_from_a(0, asm.R_UNIFORM, ws=True))  # rb0 chunks
    prog.emit(mov_from_a(1, asm.R_UNIFORM))  # ra1 input
    prog.emit(mov_from_a(1, asm.R_UNIFORM, ws=True))  # rb1 weight base
    prog.emit(mov_from_a(3, asm.R_UNIFORM))  # ra3 output
    for reg in range(2, 8):
        prog.emit(mov_from_a(reg, asm.R_UNIFORM, ws=True))  # rb2..rb7
    prog.label("row")
    prog.emit(mov_small_imm(asm.W_R3, 0))  # the 16 sums start at +0
    prog.emit(mov_from_b(2, 1))  # ra2 = weight base
    prog.emit(mov_from_b(4, 0))  # ra4 = chunks
    prog.label("chunk")
    prog.emit(mov_from_a(asm.W_NOP, asm.R_MUTEX))
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 2))  # load into the first VPM row
    prog.emit(mov_from_a(asm.W_DMA_ADDR, 1))  # input chunk
    prog.emit(mov_from_a(asm.W_NOP, asm.R_VDR_WAIT))
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 3))  # load into the second VPM row
    prog.emit(mov_from_a(asm.W_DMA_ADDR, 2))  # weight chunk
    prog.emit(mov_from_a(asm.W_NOP, asm.R_VDR_WAIT))
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 4))  # VPM read setup, 2 rows
    prog.emit(mov_from_a(asm.W_R0, asm.R_VPM))
    prog.emit(mov_from_a(asm.W_R1, asm.R_VPM))
    prog.emit(mov_from_a(asm.W_MUTEX, asm.R_NOP))
    prog.emit(mul_op("fmul", asm.W_R1, asm.MUX_R0, asm.MUX_R1))
    prog.emit(add_op("fadd", asm.W_R3, asm.MUX_R3, asm.MUX_R1))
    prog.emit(_inc(1, 7))
    prog.emit(_inc(2, 7))
    prog.emit(_count_down(4))
    _loop_back(prog, "chunk")
    prog.emit(mov_from_a(asm.W_NOP, asm.R_MUTEX))
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 5, ws=True))  # VPM write setup
    prog.emit(mov_from_acc(asm.W_VPM, asm.MUX_R3))
    prog.emit(mov_from_b(asm.W_VPM_SETUP, 6, ws=True))  # DMA store setup
    prog.emit(mov_from_a(asm.W_DMA_ADDR, 3, ws=True))  # start the store
    prog.emit(mov_from_b(asm.W_NOP, asm.R_VDW_WAIT))
    prog.emit(mov_from_a(asm.W_MUTEX, asm.R_NOP))
    prog.emit(_inc(3, 7))
    prog.emit(_count_down(0))
    _loop_back(prog, "row")
    _barrier_and_end(prog)
    return Kernel("matvec", tuple(prog.words()), MATVEC_UNIFORMS + 2)


def op_kernels() -> dict[str, Kernel]:
    """Every kernel netroot's torch operators run, by name."""
    out = {name: elementwise(name) for name in ELEMENTWISE}
    out["matvec"] = matvec()
    return out


__all__ = ["ELEMENTWISE", "Kernel", "elementwise", "matvec", "op_kernels"]
