"""Golden encodings of every instruction form, field by field, and the range checks."""

from __future__ import annotations

import pytest

from netroot.qpu import asm, kernels
from netroot.qpu.asm import AsmError

# (field, low bit, width) of the ALU form, per the Reference Guide's encoding table.
ALU_FIELDS = [
    ("sig", 60, 4), ("unpack", 57, 3), ("pm", 56, 1), ("pack", 52, 4), ("cond_add", 49, 3),
    ("cond_mul", 46, 3), ("sf", 45, 1), ("ws", 44, 1), ("waddr_add", 38, 6),
    ("waddr_mul", 32, 6), ("op_mul", 29, 3), ("op_add", 24, 5), ("raddr_a", 18, 6),
    ("raddr_b", 12, 6), ("add_a", 9, 3), ("add_b", 6, 3), ("mul_a", 3, 3), ("mul_b", 0, 3),
]  # fmt: skip
ZERO_ALU = {name: 0 for name, _, _ in ALU_FIELDS}


@pytest.mark.parametrize(("name", "low", "width"), ALU_FIELDS)
def test_alu_field_lands_at_its_bits(name: str, low: int, width: int) -> None:
    top = (1 << width) - 1
    fields = dict(ZERO_ALU, sig=asm.SIG_NONE)
    fields[name] = top if name != "sig" else asm.SIG_SMALL_IMM
    word = asm.alu(**fields)
    base = asm.alu(**dict(ZERO_ALU, sig=asm.SIG_NONE))
    expected = base & ~(((1 << width) - 1) << low) | (fields[name] << low)
    assert word == expected
    assert asm.decode(word)[name] == fields[name]


@pytest.mark.parametrize(("name", "_low", "width"), ALU_FIELDS)
def test_alu_field_out_of_range_names_the_field(name: str, _low: int, width: int) -> None:
    fields = dict(ZERO_ALU, sig=asm.SIG_NONE)
    fields[name] = 1 << width
    with pytest.raises(AsmError, match=f"field {name}="):
        asm.alu(**fields)
    fields[name] = -1
    with pytest.raises(AsmError, match=f"field {name}="):
        asm.alu(**fields)


def test_opcode_numbers_match_the_guide() -> None:
    assert [asm.ADD_OPS[n] for n in ("nop", "fadd", "fsub", "fmin", "fmax", "fminabs")] == [
        0, 1, 2, 3, 4, 5,
    ]  # fmt: skip
    assert [asm.ADD_OPS[n] for n in ("add", "sub", "shr", "asr", "ror", "shl")] == list(
        range(12, 18)
    )
    assert [asm.ADD_OPS[n] for n in ("min", "max", "and", "or", "xor", "not", "clz")] == list(
        range(18, 25)
    )
    assert [asm.MUL_OPS[n] for n in ("nop", "fmul", "mul24", "v8muld", "v8min", "v8max")] == list(
        range(6)
    )


def test_golden_words_published_by_other_assemblers() -> None:
    # vc4asm output quoted in rpi-ffmpeg's rpi_shader.c: "mov ra0, unif", "sub r0, unif, 1",
    # and the canonical "nop ; nop ; thrend".
    assert kernels.mov_from_a(0, asm.R_UNIFORM) == 0x10020027_15827D80
    sub = asm.alu(sig=asm.SIG_SMALL_IMM, op_add=asm.ADD_OPS["sub"], cond_add=asm.COND["always"],
                  waddr_add=asm.W_R0, raddr_a=asm.R_UNIFORM, raddr_b=asm.small_imm_code(1),
                  add_a=asm.MUX_A, add_b=asm.MUX_B)  # fmt: skip
    assert sub == 0xD0020827_0D801DC0
    assert kernels.nop(asm.SIG_THREAD_END) == 0x300009E7_009E7000


def test_load_immediate_fields() -> None:
    word = asm.load_imm32(value=0xDEADBEEF, waddr_add=asm.W_R1, cond_add=1, ws=True, sf=True)
    assert word >> 60 == 0xE
    assert (word >> 57) & 7 == 0  # 32-bit form
    assert word & 0xFFFFFFFF == 0xDEADBEEF
    f = asm.decode(word)
    assert (f["waddr_add"], f["waddr_mul"], f["ws"], f["sf"], f["cond_add"]) == (33, 39, 1, 1, 1)
    with pytest.raises(AsmError, match="field value="):
        asm.load_imm32(value=1 << 32)


def test_semaphore_encoding_matches_qpulib() -> None:
    # QPULib: high = 0xE8000000 | 39 << 6 | 39, low = sa << 4 | id.
    assert asm.semaphore(number=0, decrement=False) == 0xE80009E7_00000000
    assert asm.semaphore(number=15, decrement=True) == 0xE80009E7_0000001F
    f = asm.decode(asm.semaphore(number=3, decrement=True))
    assert (f["unpack"], f["sa"], f["semaphore"]) == (4, 1, 3)
    with pytest.raises(AsmError, match="field semaphore="):
        asm.semaphore(number=16, decrement=False)


def test_branch_fields_and_label_offsets() -> None:
    word = asm.branch(cond_br=asm.BRANCH_COND["allnz"], immediate=-64)
    assert word >> 60 == 0xF
    assert (word >> 52) & 15 == 1
    assert (word >> 51) & 1 == 1  # relative
    assert word & 0xFFFFFFFF == (-64) & 0xFFFFFFFF
    prog = asm.Program()
    prog.label("top")
    prog.emit(kernels.nop())
    prog.branch_to("top", "always")
    for _ in range(3):
        prog.emit(kernels.nop())
    # target = branch address + 4 instructions + offset: 0 = 1 + 4 + offset/8 -> -40 bytes.
    assert asm.decode(prog.words()[1])["immediate"] == (-40) & 0xFFFFFFFF
    with pytest.raises(AsmError, match="undefined label"):
        bad = asm.Program()
        bad.branch_to("nowhere", "always")
        bad.words()
    with pytest.raises(AsmError, match="branch condition"):
        asm.Program().branch_to("x", "sometimes")


def test_small_immediates() -> None:
    assert asm.small_imm_code(0) == 0
    assert asm.small_imm_code(15) == 15
    assert asm.small_imm_code(-1) == 31
    assert asm.small_imm_code(-16) == 16
    assert asm.small_imm_code(1.0) == 32
    assert asm.small_imm_code(128.0) == 39
    assert asm.small_imm_code(0.5) == 47
    assert asm.small_imm_code(1 / 256) == 40
    with pytest.raises(AsmError):
        asm.small_imm_code(16)
    with pytest.raises(AsmError):
        asm.small_imm_code(3.0)


def test_alu_rejects_non_alu_signals() -> None:
    with pytest.raises(AsmError, match="not an ALU signal"):
        asm.alu(sig=asm.SIG_BRANCH)


def test_words_are_stored_low_word_first() -> None:
    assert asm.to_words32([0x11111111_22222222]) == [0x22222222, 0x11111111]
