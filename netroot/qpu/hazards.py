"""A static hazard checker for QPU programs: the rules that apply to our kernels.

Rules marked "guide" are from the Reference Guide's "Summary of Instruction Restrictions" and
its thread-end and branch sections; rules marked "ours" are conservative project rules that
follow from the VPM/DMA and mutex semantics (the emulator rejects the same things at run time).
The checker walks the program in order and, for branches, also checks the first instruction at
a branch target against the last delay slot before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from netroot.qpu import asm

RULES = {
    "regfile-raw": "guide: an instruction must not read a regfile A/B location written by the "
    "previous instruction",
    "thrend-regfile": "guide: the thread-end instruction must not write regfile A or B",
    "thrend-io": "guide: thread end and its two delay slots must not read uniforms or access "
    "VPM, VDR or VDW",
    "thrend-missing": "guide: a program ends with thread end followed by two delay slots",
    "branch-in-delay": "guide: a branch must not sit in another branch's three delay slots",
    "thrend-in-delay": "ours: no thread end inside branch delay slots",
    "same-dest": "ours: the add and mul ALUs must not write the same destination",
    "double-uniform": "ours: at most one uniform read per instruction",
    "vpm-read-in-flight": "ours: a DMA load must be waited for (read ra50) before reading VPM",
    "store-not-waited": "ours: a DMA store must be waited for (read rb50) before thread end",
    "mutex-pairing": "ours: release only a held mutex; end with the mutex released",
}

_IO_READS = {asm.R_UNIFORM, asm.R_VPM, 49, asm.R_VDR_WAIT}
_IO_WRITES = {asm.W_VPM, asm.W_VPM_SETUP, asm.W_DMA_ADDR}


@dataclass(frozen=True)
class Hazard:
    """One broken rule at one instruction index."""

    index: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"instruction {self.index}: {self.rule}: {self.detail} ({RULES[self.rule]})"


@dataclass(frozen=True)
class _Info:
    sig: int
    reads_a: int | None  # regfile/peripheral address read through regfile A, if any
    reads_b: int | None
    writes: tuple[tuple[str, int], ...]  # (side, address) actually written
    is_branch: bool
    branch_target: int | None


def _muxes_used(f: dict[str, int]) -> set[int]:
    used: set[int] = set()
    if f["op_add"]:
        used |= {f["add_a"], f["add_b"]}
    if f["op_mul"]:
        used |= {f["mul_a"], f["mul_b"]}
    return used


def _info(index: int, word: int) -> _Info:
    f = asm.decode(word)
    sig = f["sig"]
    if sig == asm.SIG_BRANCH:
        imm = f["immediate"] - (1 << 32) if f["immediate"] & 0x80000000 else f["immediate"]
        target = index + 4 + imm // 8 if f["rel"] and not f["reg"] else None
        return _Info(sig, None, None, (), True, target)
    add_side, mul_side = ("B", "A") if f["ws"] else ("A", "B")
    writes = []
    add_active = (sig == asm.SIG_LOAD_IMM and f["unpack"] != 4) or f.get("op_add", 0) != 0
    mul_active = (sig == asm.SIG_LOAD_IMM and f["unpack"] != 4) or f.get("op_mul", 0) != 0
    if add_active and f["cond_add"] and f["waddr_add"] != asm.W_NOP:
        writes.append((add_side, f["waddr_add"]))
    if mul_active and f["cond_mul"] and f["waddr_mul"] != asm.W_NOP:
        writes.append((mul_side, f["waddr_mul"]))
    if sig == asm.SIG_LOAD_IMM:
        return _Info(sig, None, None, tuple(writes), False, None)
    # Peripheral reads happen whatever the muxes say; regfile reads matter only if used.
    used = _muxes_used(f)
    ra, rb = f["raddr_a"], f["raddr_b"]
    reads_a = ra if (ra >= 32 or asm.MUX_A in used) and ra != asm.R_NOP else None
    small = sig == asm.SIG_SMALL_IMM
    reads_b = rb if not small and (rb >= 32 or asm.MUX_B in used) and rb != asm.R_NOP else None
    return _Info(sig, reads_a, reads_b, tuple(writes), False, None)


def check(words: list[int] | tuple[int, ...]) -> list[Hazard]:
    """Every rule in RULES broken by the program, in instruction order."""
    infos = [_info(i, w) for i, w in enumerate(words)]
    found: list[Hazard] = []
    _check_pairs(infos, found)
    _check_delay_slots(infos, found)
    _check_thread_end(infos, found)
    _check_dma_and_mutex(infos, found)
    return sorted(found, key=lambda h: (h.index, h.rule))


def _raw(prev: _Info, cur: _Info, index: int, found: list[Hazard]) -> None:
    for side, addr in prev.writes:
        read = cur.reads_a if side == "A" else cur.reads_b
        if addr < 32 and read == addr:
            found.append(Hazard(index, "regfile-raw", f"reads r{side.lower()}{addr}"))


def _check_pairs(infos: list[_Info], found: list[Hazard]) -> None:
    for i, cur in enumerate(infos):
        if i > 0:
            _raw(infos[i - 1], cur, i, found)
        if cur.is_branch and cur.branch_target is not None and 0 <= cur.branch_target < len(infos):
            last_slot = i + 3
            if last_slot < len(infos):
                _raw(infos[last_slot], infos[cur.branch_target], cur.branch_target, found)
        if cur.reads_a == asm.R_UNIFORM and cur.reads_b == asm.R_UNIFORM:
            found.append(Hazard(i, "double-uniform", "raddr_a and raddr_b both 32"))
        if len(cur.writes) == 2:
            (s1, a1), (s2, a2) = cur.writes
            if a1 == a2 and (s1 == s2 or 32 <= a1 < 36):
                found.append(Hazard(i, "same-dest", f"both write address {a1}"))


def _check_delay_slots(infos: list[_Info], found: list[Hazard]) -> None:
    for i, cur in enumerate(infos):
        if not cur.is_branch:
            continue
        for j in range(i + 1, min(i + 4, len(infos))):
            if infos[j].is_branch:
                found.append(Hazard(j, "branch-in-delay", f"delay slot of the branch at {i}"))
            if infos[j].sig == asm.SIG_THREAD_END:
                found.append(Hazard(j, "thrend-in-delay", f"delay slot of the branch at {i}"))


def _check_thread_end(infos: list[_Info], found: list[Hazard]) -> None:
    ends = [i for i, info in enumerate(infos) if info.sig == asm.SIG_THREAD_END]
    if not ends:
        found.append(Hazard(len(infos), "thrend-missing", "no thread-end instruction"))
    for i in ends:
        if any(side in "AB" and addr < 32 for side, addr in infos[i].writes):
            found.append(Hazard(i, "thrend-regfile", "writes a register file"))
        if i + 2 >= len(infos):
            found.append(Hazard(i, "thrend-missing", "fewer than two delay slots follow"))
        for j in range(i, min(i + 3, len(infos))):
            info = infos[j]
            io = {r for r in (info.reads_a, info.reads_b) if r is not None} & _IO_READS
            io |= {addr for _, addr in info.writes} & _IO_WRITES
            if io:
                found.append(Hazard(j, "thrend-io", f"touches address(es) {sorted(io)}"))


def _check_dma_and_mutex(infos: list[_Info], found: list[Hazard]) -> None:
    # Straight-line approximation over program order, which is how our kernels are laid out.
    load_in_flight = store_in_flight = holds_mutex = False
    for i, info in enumerate(infos):
        if info.reads_a == asm.R_VDR_WAIT:
            load_in_flight = False
        if info.reads_b == asm.R_VDW_WAIT:
            store_in_flight = False
        if asm.R_VPM in (info.reads_a, info.reads_b) and load_in_flight:
            found.append(Hazard(i, "vpm-read-in-flight", "VPM read before the load wait"))
        if asm.R_MUTEX in (info.reads_a, info.reads_b):
            holds_mutex = True
        for side, addr in info.writes:
            if addr == asm.W_DMA_ADDR:
                load_in_flight = load_in_flight or side == "A"
                store_in_flight = store_in_flight or side == "B"
            if addr == asm.W_MUTEX:
                if not holds_mutex:
                    found.append(Hazard(i, "mutex-pairing", "release without acquire"))
                holds_mutex = False
        if info.sig == asm.SIG_THREAD_END:
            if store_in_flight:
                found.append(Hazard(i, "store-not-waited", "DMA store still in flight"))
            if holds_mutex:
                found.append(Hazard(i, "mutex-pairing", "thread end while holding the mutex"))
