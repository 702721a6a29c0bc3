"""Memory, ALU operations and the validating decoder of the QPU emulator (see emulator.py).

Decoding follows the Reference Guide's instruction encoding (section 3) independently of our
assembler, so golden tests of the two cross-check each other. Stdlib-only (bundled).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

LANES = 16
VPM_ROWS = 64  # rows of 16 words addressable by the generic 32-bit horizontal setups we model
BUS_MASK = 0x3FFFFFFF
FLT_MIN = 1.1754943508222875e-38
_I16 = struct.Struct("<16I")
_F16 = struct.Struct("<16f")
_ZERO = (0,) * LANES
_ELEMS = tuple(range(LANES))


class EmulatorError(Exception):
    """The program did something the emulator does not implement or the guide leaves undefined."""


class Memory:
    """Physical memory made of regions; every access goes through the bus alias mask."""

    def __init__(self) -> None:
        self.regions: list[tuple[int, bytearray]] = []

    def add_region(self, phys: int, size: int) -> bytearray:
        """Back `size` bytes at physical address `phys` with a zeroed bytearray."""
        buf = bytearray(size)
        self.regions.append((phys, buf))
        return buf

    def remove_region(self, phys: int) -> None:
        """Forget the region starting at `phys`."""
        self.regions = [(base, buf) for base, buf in self.regions if base != phys]

    def locate(self, bus: int, nbytes: int) -> tuple[bytearray, int]:
        """(buffer, offset) holding `nbytes` at bus address `bus`; EmulatorError if unmapped."""
        phys = bus & BUS_MASK
        for base, buf in self.regions:
            if base <= phys and phys + nbytes <= base + len(buf):
                return buf, phys - base
        raise EmulatorError(f"access to unmapped memory at bus 0x{bus:08x} ({nbytes} bytes)")

    def read_words(self, bus: int, count: int) -> list[int]:
        """`count` little-endian 32-bit words from bus address `bus`."""
        buf, off = self.locate(bus, 4 * count)
        return list(struct.unpack_from(f"<{count}I", buf, off))

    def write_words(self, bus: int, words: list[int] | tuple[int, ...]) -> None:
        """Store 32-bit words at bus address `bus`."""
        buf, off = self.locate(bus, 4 * len(words))
        struct.pack_into(f"<{len(words)}I", buf, off, *words)


def _floats(v: tuple[int, ...] | list[int]) -> tuple[float, ...]:
    # Denormal inputs read as signed zero, as on the QPU. min(map(abs)) runs in C: the slow
    # path only when some lane is below FLT_MIN (zeros included).
    out = _F16.unpack(_I16.pack(*v))
    if min(map(abs, out)) < FLT_MIN:
        out = tuple(0.0 * x if 0.0 < abs(x) < FLT_MIN else x for x in out)
    return out


def _bits(values: list[float]) -> tuple[int, ...]:
    try:
        out = _I16.unpack(_F16.pack(*values))
    except OverflowError:  # beyond FLT_MAX after rounding in double: +-infinity
        values = [x if abs(x) <= 3.4028234663852886e38 else x * float("inf") for x in values]
        out = _I16.unpack(_F16.pack(*values))
    if min(map(abs, values)) < FLT_MIN:  # denormal results flush to signed zero
        out = tuple(r & 0x80000000 if r & 0x7F800000 == 0 else r for r in out)
    return out


def _fadd(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return _bits([x + y for x, y in zip(_floats(a), _floats(b), strict=True)])


def _fsub(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return _bits([x - y for x, y in zip(_floats(a), _floats(b), strict=True)])


def _fmul(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return _bits([x * y for x, y in zip(_floats(a), _floats(b), strict=True)])


def _v8min(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    if a == b:
        return a
    return tuple(
        sum(min((x >> s) & 0xFF, (y >> s) & 0xFF) << s for s in (0, 8, 16, 24))
        for x, y in zip(a, b, strict=True)
    )


Vec = tuple[int, ...]
AluOp = Callable[[Vec, Vec], Vec]
ADD_IMPL: dict[int, AluOp] = {
    1: _fadd,
    2: _fsub,
    12: lambda a, b: tuple((x + y) & 0xFFFFFFFF for x, y in zip(a, b, strict=True)),
    13: lambda a, b: tuple((x - y) & 0xFFFFFFFF for x, y in zip(a, b, strict=True)),
    14: lambda a, b: tuple(x >> (y & 31) for x, y in zip(a, b, strict=True)),
    17: lambda a, b: tuple((x << (y & 31)) & 0xFFFFFFFF for x, y in zip(a, b, strict=True)),
    20: lambda a, b: tuple(x & y for x, y in zip(a, b, strict=True)),
    21: lambda a, b: a if a is b else tuple(x | y for x, y in zip(a, b, strict=True)),
    22: lambda a, b: tuple(x ^ y for x, y in zip(a, b, strict=True)),
}
MUL_IMPL: dict[int, AluOp] = {
    1: _fmul,
    2: lambda a, b: tuple(
        ((x & 0xFFFFFF) * (y & 0xFFFFFF)) & 0xFFFFFFFF for x, y in zip(a, b, strict=True)
    ),
    4: _v8min,
}
FLOAT_ADD_OPS = {1, 2}
READ_A = set(range(32)) | {32, 38, 39, 48, 50, 51}
READ_B = set(range(32)) | {32, 38, 39, 48, 50, 51}
WRITES = set(range(36)) | {38, 39, 48, 49, 50, 51}


def small_imm_value(code: int) -> int:
    """32-bit value of small-immediate code 0..47 (48..63 are rotates, not modelled)."""
    if code < 16:
        return code
    if code < 32:
        return (code - 32) & 0xFFFFFFFF
    if code < 40:
        return int(struct.unpack("<I", struct.pack("<f", float(2 ** (code - 32))))[0])
    if code < 48:
        return int(struct.unpack("<I", struct.pack("<f", 2.0 ** (code - 48)))[0])
    raise EmulatorError(f"small immediate {code} is a vector rotate, which is not modelled")


@dataclass(frozen=True)
class Decoded:
    """One instruction, decoded and validated once (cached by its 64-bit value)."""

    kind: str  # "alu", "ldi", "sema", "branch"
    sig: int = 1
    cond_add: int = 0
    cond_mul: int = 0
    sf: bool = False
    ws: bool = False
    waddr_add: int = 39
    waddr_mul: int = 39
    op_add: int = 0
    op_mul: int = 0
    raddr_a: int = 39
    raddr_b: int = 39
    muxes: tuple[int, int, int, int] = (0, 0, 0, 0)
    imm: int = 0  # small/load immediate value, branch offset, or semaphore (sa<<4 | number)
    uses_a: bool = False
    uses_b: bool = False


def decode(word: int) -> Decoded:
    """Decode and validate one instruction; EmulatorError names what is not modelled."""
    hi, lo = word >> 32, word & 0xFFFFFFFF
    sig = hi >> 28
    cond_add, cond_mul = (hi >> 17) & 7, (hi >> 14) & 7
    sf, ws = bool((hi >> 13) & 1), bool((hi >> 12) & 1)
    waddr_add, waddr_mul = (hi >> 6) & 63, hi & 63
    where = f"instruction 0x{word:016x}"
    if sig == 15:
        cond_br, rel, reg = (hi >> 20) & 15, (hi >> 19) & 1, (hi >> 18) & 1
        if not rel or reg:
            raise EmulatorError(f"{where}: only relative, non-register branches are modelled")
        if cond_br not in (0, 1, 2, 3, 4, 5, 6, 7, 15):
            raise EmulatorError(f"{where}: branch condition {cond_br} (carry) is not modelled")
        if waddr_add != 39 or waddr_mul != 39:
            raise EmulatorError(f"{where}: branch link writes are not modelled")
        offset = lo - (1 << 32) if lo & 0x80000000 else lo
        return Decoded("branch", sig=sig, cond_add=cond_br, imm=offset)
    unpack, pm, pack = (hi >> 25) & 7, (hi >> 24) & 1, (hi >> 20) & 15
    if pm or pack or (unpack and sig != 14):
        raise EmulatorError(f"{where}: pack/unpack (pm={pm} pack={pack} unpack={unpack})")
    for cond in (cond_add, cond_mul):
        if cond in (6, 7):
            raise EmulatorError(f"{where}: carry conditions are not modelled")
    for waddr in (waddr_add, waddr_mul):
        if waddr not in WRITES:
            raise EmulatorError(f"{where}: write address {waddr} is not modelled")
    if sig == 14:
        if unpack == 4:
            if waddr_add != 39 or waddr_mul != 39 or sf:
                raise EmulatorError(f"{where}: semaphore instruction with writes")
            return Decoded("sema", sig=sig, imm=lo & 0x1F)
        if unpack:
            raise EmulatorError(f"{where}: per-element load immediate (unpack={unpack})")
        if sf:
            raise EmulatorError(f"{where}: load immediate with set-flags")
        return Decoded(
            "ldi",
            sig=sig,
            cond_add=cond_add,
            cond_mul=cond_mul,
            ws=ws,
            waddr_add=waddr_add,
            waddr_mul=waddr_mul,
            imm=lo,
        )
    if sig not in (1, 3, 13):
        raise EmulatorError(f"{where}: signal {sig} is not modelled")
    op_mul, op_add = lo >> 29, (lo >> 24) & 31
    raddr_a, raddr_b = (lo >> 18) & 63, (lo >> 12) & 63
    muxes = ((lo >> 9) & 7, (lo >> 6) & 7, (lo >> 3) & 7, lo & 7)
    if op_add and op_add not in ADD_IMPL:
        raise EmulatorError(f"{where}: add op {op_add} is not modelled")
    if op_mul and op_mul not in MUL_IMPL:
        raise EmulatorError(f"{where}: mul op {op_mul} is not modelled")
    used = (muxes[:2] if op_add else ()) + (muxes[2:] if op_mul else ())
    if any(m in (4, 5) for m in used):
        raise EmulatorError(f"{where}: reads of r4/r5 are not modelled")
    if raddr_a not in READ_A:
        raise EmulatorError(f"{where}: read address A {raddr_a} is not modelled")
    imm = 0
    if sig == 13:
        imm = small_imm_value(raddr_b)
    elif raddr_b not in READ_B:
        raise EmulatorError(f"{where}: read address B {raddr_b} is not modelled")
    if raddr_a == raddr_b == 32 and sig != 13:
        raise EmulatorError(f"{where}: two uniform reads in one instruction")
    if sf and (cond_add if op_add else cond_mul) != 1:
        raise EmulatorError(f"{where}: set-flags with a conditional write is not modelled")
    return Decoded(
        "alu",
        sig=sig,
        cond_add=cond_add if op_add else 0,
        cond_mul=cond_mul if op_mul else 0,
        sf=sf,
        ws=ws,
        waddr_add=waddr_add,
        waddr_mul=waddr_mul,
        op_add=op_add,
        op_mul=op_mul,
        raddr_a=raddr_a,
        raddr_b=raddr_b,
        muxes=muxes,
        imm=imm,
        uses_a=6 in used,
        uses_b=7 in used,
    )
