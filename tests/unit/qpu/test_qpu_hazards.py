"""The hazard checker: each rule fires on a minimal program, and our kernels are clean."""

from __future__ import annotations

import pytest

from netroot.qpu import asm, hazards, kernels
from netroot.qpu.kernels import mov_from_a, mov_from_b, nop

END = [nop(asm.SIG_THREAD_END), nop(), nop()]


def rules(words: list[int]) -> list[tuple[int, str]]:
    return [(h.index, h.rule) for h in hazards.check(words)]


@pytest.mark.parametrize("kernel", list(kernels.all_kernels().values()), ids=lambda k: k.name)
def test_smoke_kernels_have_no_hazards(kernel: kernels.Kernel) -> None:
    assert hazards.check(kernel.words) == []


def test_regfile_read_after_write() -> None:
    words = [mov_from_a(5, asm.R_UNIFORM), mov_from_a(asm.W_R0, 5), *END]
    assert rules(words) == [(1, "regfile-raw")]
    # One instruction in between is enough; so is reading the other file's address 5.
    assert rules([mov_from_a(5, asm.R_UNIFORM), nop(), mov_from_a(asm.W_R0, 5), *END]) == []
    assert rules([mov_from_a(5, asm.R_UNIFORM), mov_from_b(asm.W_R0, 5), *END]) == []
    # ws swaps the add ALU's write to regfile B: then reading rb5 is the hazard.
    words = [mov_from_a(5, asm.R_UNIFORM, ws=True), mov_from_b(asm.W_R0, 5), *END]
    assert rules(words) == [(1, "regfile-raw")]


def test_regfile_read_at_branch_target_after_last_delay_slot() -> None:
    prog = asm.Program()
    prog.label("top")
    prog.emit(mov_from_a(asm.W_R0, 7))  # reads ra7
    prog.branch_to("top", "anyz")
    prog.emit(nop())
    prog.emit(nop())
    prog.emit(mov_from_a(7, asm.R_UNIFORM))  # last delay slot writes ra7
    for w in END:
        prog.emit(w)
    assert (0, "regfile-raw") in rules(prog.words())


def test_thread_end_rules() -> None:
    assert rules([mov_from_a(3, asm.R_UNIFORM), nop(), nop()]) == [(3, "thrend-missing")]
    writes_reg = asm.alu(sig=asm.SIG_THREAD_END, op_add=asm.ADD_OPS["or"], cond_add=1,
                         waddr_add=3, add_a=asm.MUX_R0, add_b=asm.MUX_R0)  # fmt: skip
    assert rules([writes_reg, nop(), nop()]) == [(0, "thrend-regfile")]
    assert rules([nop(asm.SIG_THREAD_END), mov_from_a(asm.W_R0, asm.R_UNIFORM), nop()]) == [
        (1, "thrend-io")
    ]
    assert rules([nop(asm.SIG_THREAD_END), nop(), mov_from_a(asm.W_R0, asm.R_VPM)]) == [
        (2, "thrend-io")
    ]
    assert rules([nop(asm.SIG_THREAD_END), nop()]) == [(0, "thrend-missing")]


def test_branch_and_thread_end_in_delay_slots() -> None:
    prog = asm.Program()
    prog.label("a")
    prog.branch_to("a", "always")
    prog.branch_to("a", "always")
    prog.emit(nop(asm.SIG_THREAD_END))
    prog.emit(nop())
    prog.emit(nop())
    prog.emit(nop())
    found = rules(prog.words())
    assert (1, "branch-in-delay") in found
    assert (2, "thrend-in-delay") in found


def test_both_alus_same_destination_and_double_uniform() -> None:
    same = asm.alu(op_add=asm.ADD_OPS["or"], cond_add=1, waddr_add=asm.W_R0, op_mul=1,
                   cond_mul=1, waddr_mul=asm.W_R0)  # fmt: skip
    assert rules([same, *END]) == [(0, "same-dest")]
    double = asm.alu(op_add=asm.ADD_OPS["or"], cond_add=1, waddr_add=asm.W_R0,
                     raddr_a=asm.R_UNIFORM, raddr_b=asm.R_UNIFORM, add_a=6, add_b=7)  # fmt: skip
    assert rules([double, *END]) == [(0, "double-uniform")]


def test_dma_and_mutex_rules() -> None:
    start_load = mov_from_a(asm.W_DMA_ADDR, asm.R_UNIFORM)
    read_vpm = mov_from_a(asm.W_R0, asm.R_VPM)
    assert rules([start_load, read_vpm, *END]) == [(1, "vpm-read-in-flight")]
    wait = mov_from_a(asm.W_NOP, asm.R_VDR_WAIT)
    assert rules([start_load, wait, read_vpm, *END]) == []
    start_store = mov_from_a(asm.W_DMA_ADDR, asm.R_UNIFORM, ws=True)
    assert rules([start_store, *END]) == [(1, "store-not-waited")]
    assert rules([start_store, mov_from_b(asm.W_NOP, asm.R_VDW_WAIT), *END]) == []
    release = mov_from_a(asm.W_MUTEX, asm.R_NOP)
    assert rules([release, *END]) == [(0, "mutex-pairing")]
    assert rules([mov_from_a(asm.W_NOP, asm.R_MUTEX), *END]) == [(1, "mutex-pairing")]


def test_hazard_text_cites_the_rule() -> None:
    (hazard,) = hazards.check([mov_from_a(5, asm.R_UNIFORM), mov_from_a(asm.W_R0, 5), *END])
    assert "instruction 1: regfile-raw: reads ra5" in str(hazard)
    assert "guide:" in str(hazard)
