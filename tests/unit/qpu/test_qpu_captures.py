"""The emulator's ALU against every hardware-captured result of VC4C's opcode tests.

tests/unit/fixtures/vc4c_opcode_test_captures.txt is doe300/VC4C's test/opcode_test.h (commit
1c7c3a18), captured on a VideoCore IV, written out one pair per line for every opcode the
emulator models. Every pair runs through the emulator and must give the captured result. One
row (TEST_OP_AND, first operand 0x80000000) was captured with a stale operand: its own -1
column shows which, and the row runs with that operand; a test proves the artefact from the
captures alone (the row contradicts the mirrored pairs of the other rows).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from netroot.qpu import asm
from netroot.qpu.emu_decode import ADD_IMPL, LANES, MUL_IMPL

FIXTURE = Path(__file__).parents[1] / "fixtures" / "vc4c_opcode_test_captures.txt"
Op = Callable[[tuple[int, ...], tuple[int, ...]], tuple[int, ...]]
# VC4C's table names -> the emulator's implementation of that opcode.
MODELLED: dict[str, Op] = {
    name.upper(): ADD_IMPL[asm.ADD_OPS[name]]
    for name in ("fadd", "fsub", "ftoi", "itof", "add", "sub", "shr", "shl", "and", "or", "xor")
} | {name.upper(): MUL_IMPL[asm.MUL_OPS[name]] for name in ("fmul", "mul24", "v8min")}
STALE_AND_OPERAND = 0x07068063  # what the hardware really ANDed in TEST_OP_AND's first row
INF, NEG_INF = 0x7F800000, 0xFF800000


def _captures() -> dict[str, list[tuple[int, int, int]]]:
    tables: dict[str, list[tuple[int, int, int]]] = {}
    current: list[tuple[int, int, int]] = []
    for line in FIXTURE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("["):
            current = tables.setdefault(line.strip("[]"), [])
            continue
        a, b, r = (int(field) & 0xFFFFFFFF for field in line.split())
        current.append((a, b, r))
    return tables


CAPTURES = _captures()


def _run(op: Op, pairs: list[tuple[int, int, int]]) -> list[int]:
    # Sixteen captured pairs per vector, so lanes of different kinds (NaN next to normal,
    # denormal next to zero) share a call the way they do in a kernel.
    out: list[int] = []
    for start in range(0, len(pairs), LANES):
        chunk = pairs[start : start + LANES]
        pad = [chunk[0]] * (LANES - len(chunk))
        a = tuple(p[0] for p in chunk + pad)
        b = tuple(p[1] for p in chunk + pad)
        out.extend(op(a, b)[: len(chunk)])
    return out


def _stale_rows() -> dict[int, int]:
    """TEST_OP_AND rows whose -1 column (AND with all ones: the operand itself) is not their
    stated first operand: {stated operand: the operand the hardware actually used}."""
    return {a: r for a, b, r in CAPTURES["AND"] if b == 0xFFFFFFFF and r != a}


def test_the_fixture_holds_every_modelled_opcode_and_nothing_else() -> None:
    assert set(CAPTURES) == set(MODELLED)
    counts = {name: len(pairs) for name, pairs in CAPTURES.items()}
    # 15 x 15 integer operands; 17 x 17 float operands less the 8 pairs of a positive and a
    # negative denormal the source leaves out; the two unary conversions 17 each.
    assert counts == {**dict.fromkeys(("ADD", "SUB", "SHR", "SHL", "AND", "OR", "XOR",
                                       "MUL24", "V8MIN"), 225),
                      "FADD": 281, "FSUB": 281, "FMUL": 281, "FTOI": 17, "ITOF": 17}  # fmt: skip
    assert sum(counts.values()) == 2902


@pytest.mark.parametrize("name", sorted(MODELLED))
def test_every_captured_pair_gives_the_captured_result(name: str) -> None:
    pairs = CAPTURES[name]
    stale = _stale_rows() if name == "AND" else {}
    # A stale row runs with the operand its own -1 column shows the hardware used.
    operands = [(stale.get(a, a), b, r) for a, b, r in pairs]
    differ = [
        (hex(a), hex(b), hex(r), hex(q))
        for (a, b, r), q in zip(operands, _run(MODELLED[name], operands), strict=True)
        if q != r
    ]
    assert differ == []


def test_the_and_artefact_is_one_row_with_a_stale_operand() -> None:
    assert _stale_rows() == {0x80000000: STALE_AND_OPERAND}
    table = {(a, b): r for a, b, r in CAPTURES["AND"]}
    row = [(b, r) for (a, b), r in table.items() if a == 0x80000000]
    # Against the stated operand, 10 of the row's entries contradict their own mirror pair
    # (AND commutes), which the hardware captured right in the other rows, and the diagonal
    # says AND(x, x) = 0 for x = 0x80000000.
    contradicted = [b for b, r in row if b != 0x80000000 and table[(b, 0x80000000)] != r]
    assert len(contradicted) == 10 and table[(0x80000000, 0x80000000)] == 0
    contradicted.append(0x80000000)
    stated = [(0x80000000, b, r) for b, r in row]
    wrong = [p for p, q in zip(stated, _run(MODELLED["AND"], stated), strict=True) if q != p[2]]
    assert sorted(b for _, b, _ in wrong) == sorted(contradicted)


def test_the_captured_nan_and_infinity_rules() -> None:
    # The rules docs/qpu.md states, each found in the captures as written.
    fadd, fsub, fmul = CAPTURES["FADD"], CAPTURES["FSUB"], CAPTURES["FMUL"]
    nan, neg_nan, denormal = 0x7FFFFFFF, 0xFFFFFFFF, 0x00000001
    assert (nan, neg_nan, NEG_INF) in fadd  # opposite signs: the second operand's sign
    assert (neg_nan, nan, INF) in fadd
    assert (nan, nan, NEG_INF) in fsub  # a - b = a + (-b): -b's sign
    assert (neg_nan, neg_nan, INF) in fsub
    for zero in (0, 0x80000000, denormal):
        assert (nan, zero, 0) in fmul and (zero, neg_nan, 0) in fmul  # the zero factor wins
    assert (neg_nan, 0x3F800000, NEG_INF) in fmul  # NaN x finite: an infinity, signs XOR
    assert (0x70000000, 0x70000000, INF) in fmul  # 2^194: far beyond 2^128, an infinity
    assert (nan, 0x80000000, 0) in CAPTURES["FTOI"]  # NaN -> 0 (out of the int32 range)
