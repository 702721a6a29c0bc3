"""The smoke kernels, hand-assembled with netroot.qpu.asm. Their words are what the board runs.

Register conventions (Reference Guide section 3): `mov` is `or x, x`; writes to regfile A
side addresses with ws=0 from the add ALU, B side with ws=1. Read/write addresses of the
peripherals: uniforms 32, VPM 48, VPM/DMA setup 49 (A: read/DMA-load setup, B: write/DMA-store
setup), DMA addresses 50 (A: load, B: store) and waits 50 (A: load, B: store), mutex 51.

Multi-QPU end: every QPU but the master increments semaphore 0 and ends; the master
decrements it once per other QPU, then interrupts the host once (the pattern QPULib's
kernelFinish uses; how the firmware counts interrupts is unverified, see QPU.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from netroot.qpu import asm
from netroot.qpu.layout import MADD_UNROLL

ALWAYS = asm.COND["always"]


@dataclass(frozen=True)
class Kernel:
    """An assembled kernel: its 64-bit words and how many uniforms each QPU reads."""

    name: str
    words: tuple[int, ...]
    uniforms_per_qpu: int


def add_op(
    op: str,
    waddr: int,
    a: int,
    b: int,
    *,
    raddr_a: int = asm.R_NOP,
    raddr_b: int = asm.R_NOP,
    ws: bool = False,
    sf: bool = False,
    sig: int = asm.SIG_NONE,
) -> int:
    """waddr = a `op` b on the add ALU (a, b: input muxes; the regfile reads they name)."""
    return asm.alu(
        sig=sig,
        op_add=asm.ADD_OPS[op],
        cond_add=ALWAYS,
        waddr_add=waddr,
        add_a=a,
        add_b=b,
        raddr_a=raddr_a,
        raddr_b=raddr_b,
        ws=ws,
        sf=sf,
    )


def mul_op(op: str, waddr: int, a: int, b: int, *, raddr_b: int = asm.R_NOP) -> int:
    """waddr = a `op` b on the mul ALU."""
    # The mul ALU writes the regfile-B side unless ws: accumulators are the same on both.
    return asm.alu(
        op_mul=asm.MUL_OPS[op], cond_mul=ALWAYS, waddr_mul=waddr, mul_a=a, mul_b=b, raddr_b=raddr_b
    )


def mov_from_a(waddr: int, raddr_a: int, *, ws: bool = False, sf: bool = False) -> int:
    """or waddr, ra[raddr_a], ra[raddr_a] on the add ALU."""
    return add_op("or", waddr, asm.MUX_A, asm.MUX_A, raddr_a=raddr_a, ws=ws, sf=sf)


def mov_from_b(waddr: int, raddr_b: int, *, ws: bool = False) -> int:
    """or waddr, rb[raddr_b], rb[raddr_b] on the add ALU."""
    return add_op("or", waddr, asm.MUX_B, asm.MUX_B, raddr_b=raddr_b, ws=ws)


def mov_from_acc(waddr: int, mux: int, *, ws: bool = False, sf: bool = False) -> int:
    """or waddr, rN, rN on the add ALU (accumulator source)."""
    return add_op("or", waddr, mux, mux, ws=ws, sf=sf)


def mov_small_imm(waddr: int, value: int | float, *, ws: bool = False) -> int:
    """or waddr, imm, imm with a small immediate (sig 13)."""
    imm = asm.small_imm_code(value)
    return add_op("or", waddr, asm.MUX_B, asm.MUX_B, raddr_b=imm, ws=ws, sig=asm.SIG_SMALL_IMM)


def nop(sig: int = asm.SIG_NONE) -> int:
    """An instruction that writes nothing (optionally carrying a signal)."""
    return asm.alu(sig=sig)


def _thread_end(prog: asm.Program) -> None:
    # Thread end writes no register file; its two delay slots touch no VPM/uniforms.
    prog.emit(nop(asm.SIG_THREAD_END))
    prog.emit(nop())
    prog.emit(nop())


def _barrier_and_end(prog: asm.Program) -> None:
    """Reads 2 uniforms: role (0 master, 1 worker), waits (master: num_qpus-1)."""
    prog.emit(mov_from_a(asm.W_NOP, asm.R_UNIFORM, sf=True))  # Z set on all lanes -> master
    prog.branch_to("master", "allz")
    prog.emit(mov_from_a(asm.W_R2, asm.R_UNIFORM))  # delay slot: waits -> r2 (read on both paths)
    prog.emit(nop())
    prog.emit(nop())
    prog.emit(asm.semaphore(number=0, decrement=False))  # worker: signal the master
    _thread_end(prog)
    prog.label("master")
    prog.emit(mov_from_acc(asm.W_NOP, asm.MUX_R2, sf=True))
    prog.branch_to("done", "allz")  # a single QPU waits for nobody
    for _ in range(3):
        prog.emit(nop())
    prog.label("wait")
    prog.emit(asm.semaphore(number=0, decrement=True))
    one = asm.small_imm_code(1)
    prog.emit(
        add_op("sub", asm.W_R2, asm.MUX_R2, asm.MUX_B, raddr_b=one, sf=True, sig=asm.SIG_SMALL_IMM)
    )
    prog.branch_to("wait", "allnz")
    for _ in range(3):
        prog.emit(nop())
    prog.label("done")
    prog.emit(mov_small_imm(asm.W_HOST_INT, 1))
    _thread_end(prog)


def vector_add() -> Kernel:
    """C = A + B on 16 lanes: DMA-load A|B into VPM, read both, fadd, VPM write, DMA store."""
    prog = asm.Program()
    prog.emit(mov_from_a(asm.W_NOP, asm.R_MUTEX))  # acquire the mutex around VPM/DMA use
    prog.emit(mov_from_a(asm.W_VPM_SETUP, asm.R_UNIFORM))  # u0: DMA load setup (2 rows)
    prog.emit(mov_from_a(asm.W_DMA_ADDR, asm.R_UNIFORM))  # u1: input bus address -> starts the load
    prog.emit(mov_from_a(asm.W_NOP, asm.R_VDR_WAIT))  # wait for the DMA load
    prog.emit(mov_from_a(asm.W_VPM_SETUP, asm.R_UNIFORM))  # u2: VPM read setup, 2 rows
    prog.emit(mov_from_a(asm.W_VPM_SETUP, asm.R_UNIFORM, ws=True))  # u3: VPM write setup
    prog.emit(mov_from_a(asm.W_R0, asm.R_VPM))  # A
    prog.emit(mov_from_a(asm.W_R1, asm.R_VPM))  # B
    prog.emit(add_op("fadd", asm.W_VPM, asm.MUX_R0, asm.MUX_R1))
    prog.emit(mov_from_a(asm.W_VPM_SETUP, asm.R_UNIFORM, ws=True))  # u4: DMA store setup
    prog.emit(mov_from_a(asm.W_DMA_ADDR, asm.R_UNIFORM, ws=True))  # u5: output address -> store
    prog.emit(mov_from_b(asm.W_NOP, asm.R_VDW_WAIT))  # wait for the DMA store
    prog.emit(mov_from_a(asm.W_MUTEX, asm.R_NOP))  # release the mutex
    _barrier_and_end(prog)  # u6, u7
    return Kernel("vector_add", tuple(prog.words()), 8)


def _madd_pair(sig: int = asm.SIG_NONE) -> int:
    # fadd r0, r0, r1 ; fmul r3, r3, r1 — accumulators only, so no regfile hazards.
    return asm.alu(
        sig=sig,
        op_add=asm.ADD_OPS["fadd"],
        cond_add=ALWAYS,
        waddr_add=asm.W_R0,
        add_a=asm.MUX_R0,
        add_b=asm.MUX_R1,
        op_mul=asm.MUL_OPS["fmul"],
        cond_mul=ALWAYS,
        waddr_mul=asm.W_R3,
        mul_a=asm.MUX_R3,
        mul_b=asm.MUX_R1,
    )


def madd_loop() -> Kernel:
    """GFLOPS loop: per iteration MADD_UNROLL+3 fadd/fmul pairs plus one fmul; r0 counts adds."""
    prog = asm.Program()
    prog.emit(mov_small_imm(asm.W_R0, 0))  # r0 = 0.0 (bit pattern 0)
    prog.emit(mov_small_imm(asm.W_R1, 1.0))
    prog.emit(mov_small_imm(asm.W_R3, 1.0))
    prog.emit(mov_from_a(0, asm.R_UNIFORM))  # u0: iterations -> ra0
    prog.label("loop")
    for _ in range(MADD_UNROLL):
        prog.emit(_madd_pair())
    prog.emit(
        asm.alu(
            sig=asm.SIG_SMALL_IMM,
            op_add=asm.ADD_OPS["sub"],
            cond_add=ALWAYS,
            sf=True,
            waddr_add=0,
            raddr_a=0,
            add_a=asm.MUX_A,
            add_b=asm.MUX_B,
            raddr_b=asm.small_imm_code(1),
            op_mul=asm.MUL_OPS["fmul"],
            cond_mul=ALWAYS,
            waddr_mul=asm.W_R3,
            mul_a=asm.MUX_R3,
            mul_b=asm.MUX_R1,
        )
    )
    prog.branch_to("loop", "allnz")
    for _ in range(3):
        prog.emit(_madd_pair())
    prog.emit(mov_from_a(asm.W_NOP, asm.R_MUTEX))
    prog.emit(mov_from_a(asm.W_VPM_SETUP, asm.R_UNIFORM, ws=True))  # u1: VPM write setup
    prog.emit(mov_from_acc(asm.W_VPM, asm.MUX_R0))
    prog.emit(mov_from_a(asm.W_VPM_SETUP, asm.R_UNIFORM, ws=True))  # u2: DMA store setup
    prog.emit(mov_from_a(asm.W_DMA_ADDR, asm.R_UNIFORM, ws=True))  # u3: output address
    prog.emit(mov_from_b(asm.W_NOP, asm.R_VDW_WAIT))
    prog.emit(mov_from_a(asm.W_MUTEX, asm.R_NOP))
    _barrier_and_end(prog)  # u4, u5
    return Kernel("madd_loop", tuple(prog.words()), 6)


def all_kernels() -> dict[str, Kernel]:
    """Every kernel the smoke program runs, by name."""
    return {k.name: k for k in (vector_add(), madd_loop())}
