"""An instruction-level emulator of exactly the VideoCore IV features the smoke kernels use.

Modelled (Reference Guide section 3 and the VPM/VCD chapters): 12 QPUs of 16 lanes, regfiles
A and B, accumulators r0-r3, Z/N flags, write conditions, small and load immediates, the
uniforms stream, generic VPM block reads/writes (32-bit horizontal; a read setup written while
two or more reads of the previous one are pending is ignored, as on the hardware), VCD DMA load
(VDR) and store (VDW), the mutex, 16 four-bit semaphores, host interrupts (a write of 0 to
host_int raises none), relative branches with three delay slots, thread end with two delay
slots and bus-address aliases (bus & 0x3FFFFFFF). The ALU's float arithmetic is the QPU's,
not IEEE's (emu_decode.py; docs/qpu.md sources each rule, most from VC4C's hardware captures):
fadd/fsub/fmul/itof round toward zero, denormals are flushed on input and output, a zero result
is +0, NaN inputs read as infinities, a zero factor beats them in fmul (+0), opposite
infinities sum to the second operand's, ftoi truncates and gives 0 out of the int32 range.

Everything else -- pack/unpack, r4/r5, SFU, TMU, carry flags, rotates, per-element
immediates, absolute or register branches -- is rejected with EmulatorError, never run as a
nop. So is behaviour the guide leaves undefined that we can detect: reading a regfile
location written by the previous instruction, reading VPM while a DMA load is in flight, a
branch or thread end inside branch delay slots, thread end writing a register file.

DMA transfers complete when they are started (the QPU's wait then returns at once); only the
ordering rules above are checked. The firmware side (`Machine.execute`) reads the control block
of mailbox tag 0x30011 and completes once every program has ended and at least one host
interrupt was raised; that completion rule is our model (QPU.md: unverified).
Stdlib-only: bundled into the board-side program for `--qpu emulate`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from netroot.qpu.emu_decode import (
    _ELEMS,
    _ZERO,
    ADD_IMPL,
    FLOAT_ADD_OPS,
    LANES,
    MUL_IMPL,
    NOP,
    VPM_ROWS,
    Decoded,
    EmulatorError,
    Memory,
    decode,
)

_U2 = struct.Struct("<2I")
SLICE = 64  # instructions a QPU runs before the scheduler moves on (semaphores interleave)


@dataclass(slots=True)
class QpuState:
    """Architectural state of one QPU running one program."""

    number: int
    pc: int  # bus address of the next instruction
    unif: int  # bus address of the next uniform
    ra: list[tuple[int, ...]] = field(default_factory=lambda: [_ZERO] * 32)
    rb: list[tuple[int, ...]] = field(default_factory=lambda: [_ZERO] * 32)
    acc: list[tuple[int, ...]] = field(default_factory=lambda: [_ZERO] * 4)
    zf: tuple[bool, ...] = (False,) * LANES
    nf: tuple[bool, ...] = (False,) * LANES
    vpm_read: tuple[int, int, int] = (0, 1, 0)  # row, stride, reads left
    ignored_read_setups: int = 0  # read setups dropped while 2+ reads were pending
    vpm_write: tuple[int, int] = (0, 1)  # row, stride
    vdr: int | None = None
    vdw: int | None = None
    vdw_stride: int = 0
    load_pending: bool = False
    branch_to: int = 0
    branch_in: int = 0  # delay slots left before a taken branch lands
    end_in: int = -1  # delay slots left after thread end; -1 = running
    done: bool = False
    host_interrupts: int = 0
    instructions: int = 0
    written: tuple[tuple[str, int], ...] = ()


@dataclass
class ExecuteResult:
    """What the firmware side saw: completion, interrupts, and why it stopped if it hung."""

    completed: bool
    host_interrupts: int
    instructions: int
    per_qpu_instructions: list[int]
    reason: str = ""


_Flags = tuple[bool, ...]
_BRANCH: dict[int, Callable[[_Flags, _Flags], bool]] = {
    0: lambda z, n: all(z), 1: lambda z, n: not any(z), 2: lambda z, n: any(z),
    3: lambda z, n: not all(z), 4: lambda z, n: all(n), 5: lambda z, n: not any(n),
    6: lambda z, n: any(n), 7: lambda z, n: not all(n), 15: lambda z, n: True,
}  # fmt: skip


def _merge(old: tuple[int, ...], new: tuple[int, ...], cond: int, q: QpuState) -> tuple[int, ...]:
    if cond == 1:
        return new
    flags = q.zf if cond in (2, 3) else q.nf
    want = cond in (2, 4)
    return tuple(n if f == want else o for o, n, f in zip(old, new, flags, strict=True))


class Machine:
    """The V3D's QPUs, VPM, semaphores and mutex over one physical `Memory`."""

    def __init__(self, memory: Memory, num_qpus: int = 12) -> None:
        self.memory = memory
        self.num_qpus = num_qpus
        self.vpm: list[tuple[int, ...]] = [_ZERO] * VPM_ROWS
        self.semaphores = [0] * 16  # persist across executes, as on the hardware
        self.mutex_owner: int | None = None
        self._decoded: dict[int, Decoded] = {}
        self._by_pc: dict[int, Decoded] = {}

    # --- firmware side ---------------------------------------------------------------------
    def execute(self, num_qpus: int, control_bus: int, max_instructions: int) -> ExecuteResult:
        """Run `num_qpus` programs from the control block {uniforms, code} pairs to the end."""
        if not 1 <= num_qpus <= self.num_qpus:
            raise EmulatorError(f"num_qpus={num_qpus} outside 1..{self.num_qpus}")
        # The QPUs fetch through an instruction cache: code is read from memory once per
        # execute (a program cannot rewrite itself while it runs).
        self._by_pc = {}
        pairs = self.memory.read_words(control_bus, 2 * num_qpus)
        qpus = [QpuState(i, pc=pairs[2 * i + 1], unif=pairs[2 * i]) for i in range(num_qpus)]
        running, total = list(qpus), 0
        while running:
            progressed = False
            for q in running:
                count = 0
                while count < SLICE and not q.done and self.step(q):
                    count += 1
                progressed = progressed or count > 0
                total += count
            running = [q for q in running if not q.done]
            if running and not progressed:
                blocked = ", ".join(str(q.number) for q in running)
                return self._result(
                    qpus,
                    False,
                    f"deadlock: QPUs {blocked} wait on a semaphore "
                    "or the mutex that nobody will release",
                )
            if total > max_instructions:
                return self._result(qpus, False, f"still running after {total} instructions")
        if sum(q.host_interrupts for q in qpus) == 0:
            return self._result(qpus, False, "every program ended but none interrupted the host")
        return self._result(qpus, True, "")

    @staticmethod
    def _result(qpus: list[QpuState], completed: bool, reason: str) -> ExecuteResult:
        counts = [q.instructions for q in qpus]
        irqs = sum(q.host_interrupts for q in qpus)
        return ExecuteResult(completed, irqs, sum(counts), counts, reason)

    # --- one instruction -------------------------------------------------------------------
    def fetch(self, pc: int) -> Decoded:
        """Decode (once, then cached by value) the instruction at bus address `pc`."""
        buf, off = self.memory.locate(pc, 8)
        lo, hi = _U2.unpack_from(buf, off)
        word = hi << 32 | lo
        d = self._decoded.get(word)
        if d is None:
            d = self._decoded[word] = decode(word)
        return d

    def step(self, q: QpuState) -> bool:
        """Execute one instruction of `q`; False (and no effect) if it blocks."""
        d = self._by_pc.get(q.pc)
        if d is None:
            d = self._by_pc[q.pc] = self.fetch(q.pc)
        kind = d.kind
        written: tuple[tuple[str, int], ...] = ()
        if kind == "sema":
            number, sems = d.imm & 15, self.semaphores
            if d.imm & 16:
                if sems[number] == 0:
                    return False
                sems[number] -= 1
            else:
                if sems[number] == 15:
                    return False
                sems[number] += 1
        elif kind == "branch":
            if q.branch_in or q.end_in >= 0:
                raise EmulatorError(f"branch at 0x{q.pc:08x} inside delay slots")
            if _BRANCH[d.cond_add](q.zf, q.nf):
                q.branch_to, q.branch_in = q.pc + 32 + d.imm, 4
        elif kind == "ldi":
            value = (d.imm,) * LANES
            written = self._write_all(q, d, value, value)
        else:
            if d.raddr_a == 51 or (d.raddr_b == 51 and d.sig != 13):
                if self.mutex_owner == q.number:
                    raise EmulatorError(f"QPU {q.number} acquires the mutex it already holds")
                if self.mutex_owner is not None:
                    return False
                self.mutex_owner = q.number
            written = self._alu(q, d)
            if d.sig == 3:
                if q.branch_in or q.end_in >= 0:
                    raise EmulatorError(f"thread end at 0x{q.pc:08x} inside delay slots")
                if any(side in "AB" for side, _ in written):
                    raise EmulatorError("thread end must not write regfile A or B")
                q.end_in = 3
        q.written = written
        q.instructions += 1
        q.pc += 8
        if q.branch_in:
            q.branch_in -= 1
            if q.branch_in == 0:
                q.pc = q.branch_to
        if q.end_in > 0:
            q.end_in -= 1
            q.done = q.end_in == 0
        return True

    def _read(self, q: QpuState, side: str, raddr: int, used: bool) -> tuple[int, ...]:
        if raddr < 32:
            if used and (side, raddr) in q.written:
                raise EmulatorError(
                    f"QPU {q.number} reads r{side.lower()}{raddr} written by the "
                    "previous instruction (undefined on the QPU)"
                )
            return q.ra[raddr] if side == "A" else q.rb[raddr]
        if raddr == 32:
            value = self.memory.read_words(q.unif, 1)[0]
            q.unif += 4
            return (value,) * LANES
        if raddr == 38:
            return _ELEMS if side == "A" else (q.number,) * LANES
        if raddr == 48:
            return self._vpm_read(q)
        if raddr == 50 and side == "A":
            q.load_pending = False
        return _ZERO  # 39 nop, 50 waits, 51 mutex acquire

    def _vpm_read(self, q: QpuState) -> tuple[int, ...]:
        if q.load_pending:
            raise EmulatorError(f"QPU {q.number} reads VPM while its DMA load is in flight")
        row, stride, left = q.vpm_read
        if left <= 0:
            raise EmulatorError(f"QPU {q.number} reads VPM beyond the read setup's NUM")
        if row >= VPM_ROWS:
            raise EmulatorError(f"VPM row {row} outside the modelled 0..{VPM_ROWS - 1}")
        q.vpm_read = (row + stride, stride, left - 1)
        return self.vpm[row]

    def _alu(self, q: QpuState, d: Decoded) -> tuple[tuple[str, int], ...]:
        a = self._read(q, "A", d.raddr_a, d.uses_a)
        b = (d.imm,) * LANES if d.sig == 13 else self._read(q, "B", d.raddr_b, d.uses_b)
        acc = q.acc
        srcs = (acc[0], acc[1], acc[2], acc[3], _ZERO, _ZERO, a, b)
        m = d.muxes
        add_res = ADD_IMPL[d.op_add](srcs[m[0]], srcs[m[1]]) if d.op_add else _ZERO
        mul_res = MUL_IMPL[d.op_mul](srcs[m[2]], srcs[m[3]]) if d.op_mul else _ZERO
        if d.sf:
            res = add_res if d.op_add else mul_res
            floaty = d.op_add in FLOAT_ADD_OPS if d.op_add else d.op_mul == 1
            mask = 0x7FFFFFFF if floaty else 0xFFFFFFFF
            q.zf = tuple(x & mask == 0 for x in res)
            q.nf = tuple(x >> 31 == 1 and x & mask != 0 for x in res)
        return self._write_all(q, d, add_res, mul_res)

    def _write_all(
        self, q: QpuState, d: Decoded, add_res: tuple[int, ...], mul_res: tuple[int, ...]
    ) -> tuple[tuple[str, int], ...]:
        add_side, mul_side = ("B", "A") if d.ws else ("A", "B")
        targets = []
        if d.cond_add and d.waddr_add != NOP:
            targets.append((add_side, d.waddr_add, add_res, d.cond_add))
        if d.cond_mul and d.waddr_mul != NOP:
            targets.append((mul_side, d.waddr_mul, mul_res, d.cond_mul))
        if len(targets) == 2:
            (s1, w1, _, _), (s2, w2, _, _) = targets
            if w1 == w2 and (s1 == s2 or 32 <= w1 < 36):
                raise EmulatorError(f"both ALUs write address {w1} in one instruction")
        written = []
        for side, waddr, value, cond in targets:
            if waddr < 32:
                regs = q.ra if side == "A" else q.rb
                regs[waddr] = _merge(regs[waddr], value, cond, q)
                written.append((side, waddr))
            elif waddr < 36:
                q.acc[waddr - 32] = _merge(q.acc[waddr - 32], value, cond, q)
            elif cond != 1:
                raise EmulatorError(f"conditional write to peripheral address {waddr}")
            else:
                self._peripheral(q, side, waddr, value)
        return tuple(written)

    def _peripheral(self, q: QpuState, side: str, waddr: int, value: tuple[int, ...]) -> None:
        v = value[0]  # setup and address registers take element 0
        if waddr == 38:
            # Only a non-zero write raises the interrupt (a QPU clears with 0; asurati's
            # bare-metal demo writes 1 "to interrupt the host").
            if v:
                q.host_interrupts += 1
        elif waddr == 48:
            row, stride = q.vpm_write
            if row >= VPM_ROWS:
                raise EmulatorError(f"VPM row {row} outside the modelled 0..{VPM_ROWS - 1}")
            self.vpm[row] = value
            q.vpm_write = (row + stride, stride)
        elif waddr == 49 and side == "A":
            self._read_setup(q, v)
        elif waddr == 49:
            self._write_setup(q, v)
        elif waddr == 50 and side == "A":
            self._dma_load(q, v)
        elif waddr == 50:
            self._dma_store(q, v)
        elif waddr == 51:
            if self.mutex_owner != q.number:
                raise EmulatorError(f"QPU {q.number} releases a mutex it does not hold")
            self.mutex_owner = None
        elif waddr != NOP:
            raise EmulatorError(f"write to address {waddr} (side {side}) is not modelled")

    def _read_setup(self, q: QpuState, v: int) -> None:
        if v >> 31:
            if v >> 28 == 9:
                raise EmulatorError("VDR extended-pitch setup is not modelled")
            if (v >> 28) & 7 or (v >> 11) & 1 or (v >> 24) & 15 == 0:
                raise EmulatorError(
                    f"DMA load setup 0x{v:08x}: only 32-bit horizontal rows "
                    "with MPITCH > 0 are modelled"
                )
            q.vdr = v
        elif v >> 30 == 0:
            if not (v >> 11) & 1 or (v >> 8) & 3 != 2:
                raise EmulatorError(f"VPM read setup 0x{v:08x}: only 32-bit horizontal")
            num, stride = (v >> 20) & 15 or 16, (v >> 12) & 63 or 64
            if q.vpm_read[2] >= 2:
                # Reference guide (VPM generic block read): a new read setup written while
                # two or more reads of the previous one are pending is ignored.
                q.ignored_read_setups += 1
                return
            q.vpm_read = (v & 0xFF, stride, num)
        else:
            raise EmulatorError(f"VPM/VDR read setup 0x{v:08x} has an unknown ID")

    def _write_setup(self, q: QpuState, v: int) -> None:
        ident = v >> 30
        if ident == 0:
            if not (v >> 11) & 1 or (v >> 8) & 3 != 2:
                raise EmulatorError(f"VPM write setup 0x{v:08x}: only 32-bit horizontal")
            q.vpm_write = (v & 0xFF, (v >> 12) & 63 or 64)
        elif ident == 2:
            if v & 7 or (v >> 15) & 1 or not (v >> 14) & 1:
                raise EmulatorError(f"DMA store setup 0x{v:08x}: only 32-bit horizontal rows")
            q.vdw = v
        elif ident == 3:
            if (v >> 16) & 1:
                raise EmulatorError("DMA store block mode is not modelled")
            q.vdw_stride = v & 0x1FFF
        else:
            raise EmulatorError(f"VPM/VDW write setup 0x{v:08x} has an unknown ID")

    def _dma_load(self, q: QpuState, bus: int) -> None:
        if q.vdr is None:
            raise EmulatorError(f"QPU {q.number} starts a DMA load without a load setup")
        v = q.vdr
        pitch = 8 << ((v >> 24) & 15)
        rowlen, nrows, vpitch = (v >> 20) & 15 or 16, (v >> 16) & 15 or 16, (v >> 12) & 15 or 16
        y, x = (v >> 4) & 0x7F, v & 15
        if x + rowlen > LANES:
            raise EmulatorError("DMA load row crosses a VPM row: not modelled")
        for r in range(nrows):
            row = y + r * vpitch
            if row >= VPM_ROWS:
                raise EmulatorError(f"DMA load into VPM row {row} outside 0..{VPM_ROWS - 1}")
            data = self.memory.read_words(bus + r * pitch, rowlen)
            old = list(self.vpm[row])
            old[x : x + rowlen] = data
            self.vpm[row] = tuple(old)
        q.load_pending = True

    def _dma_store(self, q: QpuState, bus: int) -> None:
        if q.vdw is None:
            raise EmulatorError(f"QPU {q.number} starts a DMA store without a store setup")
        v = q.vdw
        units, depth = (v >> 23) & 0x7F or 128, (v >> 16) & 0x7F or 128
        y, x = (v >> 7) & 0x7F, (v >> 3) & 15
        if x + depth > LANES:
            raise EmulatorError("DMA store row longer than a VPM row: not modelled")
        for r in range(units):
            if y + r >= VPM_ROWS:
                raise EmulatorError(f"DMA store from VPM row {y + r} outside 0..{VPM_ROWS - 1}")
            addr = bus + r * (4 * depth + q.vdw_stride)
            self.memory.write_words(addr, self.vpm[y + r][x : x + depth])


__all__ = ["EmulatorError", "ExecuteResult", "Machine", "Memory", "QpuState"]
