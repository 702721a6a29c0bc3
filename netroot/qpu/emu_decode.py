"""Memory, ALU operations and the validating decoder of the QPU emulator (see emulator.py).

Decoding follows the Reference Guide's instruction encoding (section 3) independently of our
assembler, so golden tests of the two cross-check each other. Stdlib-only (bundled).
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

LANES = 16
VPM_ROWS = 64  # rows of 16 words addressable by the generic 32-bit horizontal setups we model
BUS_MASK = 0x3FFFFFFF
FLT_MIN = 1.1754943508222875e-38
FLT_MAX = 3.4028234663852886e38
_I16 = struct.Struct("<16I")
_F16 = struct.Struct("<16f")
_D16 = struct.Struct("<16d")
_Q16 = struct.Struct("<16Q")
_I1 = struct.Struct("<I")
_F1 = struct.Struct("<f")
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


# The fast paths below treat the 16 lanes of a vector as one Python int of 16 fields (SWAR:
# "SIMD within a register"): a handful of big-int operations, each one C loop over 64 or
# 128 bytes, replace sixteen Python-level steps. Fields are wide enough that no carry or borrow
# crosses into the next lane; each constant below repeats one field value in every lane.
def _lanes(value: int, width: int) -> int:
    return sum(value << (width * i) for i in range(LANES))


_F_EXP = _lanes(0xFF, 32)  # float32: exponent field after >> 23
_F_ONE = _lanes(1, 32)
_F_BIT8 = _lanes(0x100, 32)
_F_FF = _lanes(0xFF, 32)
_F_MANT = _lanes(0x7FFFFF, 32)
_EXACT_ADD = _lanes(256 + 28, 32)  # 256 + 28 + ea - eb: in 256..312 iff |ea - eb| <= 28
_EXACT_HIGH = _lanes(1023 - 312, 32)
_F_THREE = _lanes(3, 32)
_F_FOUR = _lanes(4, 32)
_F_BIT10 = _lanes(0x400, 32)
_D_EXP = _lanes(0x7FF, 64)  # double: exponent field after >> 52
_D_OVER = _lanes(2047 - 1150, 64)  # bit 11 set iff exponent >= 1151 (beyond float32)
_D_UNDER = _lanes(2048 - 897, 64)  # bit 11 clear iff exponent < 897 (below FLT_MIN)
_D_ZERO = _lanes(0x7FF, 64)  # bit 11 clear iff exponent == 0 (a zero)
_D_BIT11 = _lanes(0x800, 64)
_D_MAG = _lanes(0x3FFFFFFFF, 64)  # after >> 29: float32 exponent (rebiased below) and mantissa
_D_SIGN = _lanes(0x80000000, 64)  # after >> 32: the sign at float32's bit 31
_D_ONE = _lanes(1, 64)
_REBIAS = 896 << 23  # double exponent bias 1023 -> float32's 127, in place
_D_REBIAS = _lanes(_REBIAS, 64)
_I32 = struct.Struct("<32I")


def _decode(v: tuple[int, ...] | list[int]) -> tuple[tuple[float, ...], int]:
    """The lanes as the QPU reads them (see _floats) and their exponent fields as one int."""
    raw = _I16.pack(*v)
    x = int.from_bytes(raw, "little")
    exponents = (x >> 23) & _F_EXP
    # Exponent 255 (Inf, NaN) in some lane, or exponent 0 with a mantissa (a denormal).
    if (exponents + _F_ONE) & _F_BIT8 or (~(exponents + _F_FF) & _F_BIT8) << 15 & (
        (x & _F_MANT) + _F_MANT
    ):
        out = _F16.unpack(raw)
        return tuple(_input_float(bits, f) for bits, f in zip(v, out, strict=True)), exponents
    return _F16.unpack(raw), exponents


def _floats(v: tuple[int, ...] | list[int]) -> tuple[float, ...]:
    # The QPU has no denormals, NaN or Inf handling of its own (vc4asm's VideoCoreIV-addendum;
    # VC4C's captures): a denormal input reads as zero, a NaN as the infinity of its sign (the
    # exponent decides, not the mantissa).
    # Zeros need no change (a -0 input only matters through the sign of a zero result, forced
    # to +0 anyway).
    return _decode(v)[0]


def _input_float(bits: int, x: float) -> float:
    exponent = bits & 0x7F800000
    if exponent == 0:
        return 0.0
    if exponent == 0x7F800000:
        return -math.inf if bits >> 31 else math.inf
    return x


def _rtz_bits(values: Iterable[float]) -> list[int]:
    """Float32 bits of each double, rounded toward zero; zero or below FLT_MIN -> +0; at or
    beyond 2^128 -> the infinity of its sign, in (FLT_MAX, 2^128) -> +-FLT_MAX (truncation);
    NaN -> +0: only fmul makes one here (Inf x 0), and VC4C's captures give +0 for NaN x 0
    and NaN x denormal (fadd resolves Inf - Inf before rounding, see _sum_rtz)."""
    out = []
    for b in _Q16.unpack(_D16.pack(*values)):
        exponent = ((b >> 52) & 0x7FF) - 896  # rebias 1023 -> 127
        if exponent <= 0 or (exponent == 1151 and b & 0xFFFFFFFFFFFFF):  # tiny, zero, NaN
            out.append(0)
        elif exponent >= 255:
            out.append((b >> 32) & 0x80000000 | 0x7F800000)
        else:  # dropping the low 29 mantissa bits truncates toward zero
            out.append((b >> 32) & 0x80000000 | exponent << 23 | (b >> 29) & 0x7FFFFF)
    return out


def _round_toward_zero(values: tuple[float, ...]) -> tuple[int, ...]:
    """Float32 bits of exact values, rounded toward zero (see _rtz_bits for the edges).

    _rtz_bits for all lanes at once: the double's bits shifted right by 29 truncate its
    mantissa to float32's 23 bits; less the exponent rebias, plus the sign, they are the
    float32. Lane by lane when a lane is below FLT_MIN but not zero, beyond FLT_MAX, Inf or NaN.
    """
    x = int.from_bytes(_D16.pack(*values), "little")
    exponents = (x >> 52) & _D_EXP
    zeros = ~(exponents + _D_ZERO) & _D_BIT11
    if (exponents + _D_OVER) & _D_BIT11 or (~(exponents + _D_UNDER) & _D_BIT11) ^ zeros:
        return tuple(_rtz_bits(values))
    magnitude, sign = (x >> 29) & _D_MAG, (x >> 32) & _D_SIGN
    if zeros:  # a zero result is +0: zero lanes keep nothing and are not rebiased
        nonzero = _D_ONE ^ (zeros >> 11)
        keep = nonzero * 0xFFFFFFFFF
        bits = ((magnitude & keep) - nonzero * _REBIAS) | (sign & keep)
    else:
        bits = (magnitude - _D_REBIAS) | sign
    return _I32.unpack(bits.to_bytes(8 * LANES, "little"))[::2]


def _sum_rtz(xs: tuple[float, ...], ys: tuple[float, ...], exact: bool = False) -> tuple[int, ...]:
    # x + y in double is exact unless the exponents differ by more than 28 bits (`exact` says
    # none do); then the double sum is rounded to nearest and may have landed on a float32
    # value the exact sum lies just inside of. Otherwise exact in every lane iff s - x == y and
    # s - y == x lane by lane (Fast2Sum: with |x| >= |y|, s - x is computed exactly, so it
    # equals y only when s is exact; both hold when s is exact; NaN is never equal).
    sums = tuple(map(operator.add, xs, ys))
    if exact or (
        tuple(map(operator.sub, sums, xs)) == ys and tuple(map(operator.sub, sums, ys)) == xs
    ):
        return _round_toward_zero(sums)
    # The error term (TwoSum, Knuth) says which side of s the exact sum is on.
    bits = _rtz_bits(sums)
    for i, (x, y, s) in enumerate(zip(xs, ys, sums, strict=True)):
        if s == 0.0 or not math.isfinite(s):
            continue
        err = (x - (s - (s - x))) + (y - (s - x))
        if err and (err > 0) != (s > 0) and _F1.unpack(_I1.pack(bits[i]))[0] == s:
            stepped = bits[i] - 1  # one ulp toward zero (sign-magnitude)
            bits[i] = stepped if stepped & 0x7F800000 else 0
    return tuple(bits)


def _close_exponents(ea: int, eb: int) -> bool:
    # Every lane's float32 exponents within 28 of each other: 24 + 28 + 1 bits fit a double.
    # Per lane d = 284 + ea - eb is in 29..539; it must be in 256..312: bit 8 or 9 set (the
    # two bits plus 3 carry into bit 2 of the shifted field) and d + 711 below 1024.
    d = ea + _EXACT_ADD - eb
    high = (((d >> 8) & _F_THREE) + _F_THREE) & _F_FOUR
    return high == _F_FOUR and not (d + _EXACT_HIGH) & _F_BIT10


def _second_wins(
    xs: tuple[float, ...], ys: tuple[float, ...], ea: int, eb: int
) -> tuple[float, ...]:
    # Opposite infinities (Inf or NaN operands, read as infinities) sum to the second
    # operand's infinity on the QPU: VC4C's captures give 0x7fffffff + 0xffffffff = -Inf,
    # 0xffffffff + 0x7fffffff = +Inf and 0x7fffffff - 0x7fffffff = -Inf. Replacing the first
    # by the second in those lanes makes x + y that infinity. Checked only when some lane of
    # either operand has exponent 255.
    if not ((ea + _F_ONE) | (eb + _F_ONE)) & _F_BIT8:
        return xs
    pairs = zip(xs, ys, strict=True)
    return tuple(y if x != y and math.isinf(x) and math.isinf(y) else x for x, y in pairs)


def _fadd(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    (xs, ea), (ys, eb) = _decode(a), _decode(b)
    return _sum_rtz(_second_wins(xs, ys, ea, eb), ys, _close_exponents(ea, eb))


def _fsub(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    (xs, ea), (ys, eb) = _decode(a), _decode(b)
    negated = tuple(map(operator.neg, ys))
    return _sum_rtz(_second_wins(xs, negated, ea, eb), negated, _close_exponents(ea, eb))


def _fmul(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    # A product of two 24-bit significands fits a double's 53: exact, then truncated. A zero
    # or denormal factor wins over Inf/NaN (Inf x 0 is NaN here, +0 out of _rtz_bits).
    return _round_toward_zero(tuple(map(operator.mul, _floats(a), _floats(b))))


def _ftoi(a: tuple[int, ...], _b: tuple[int, ...]) -> tuple[int, ...]:
    # Truncation toward zero; out of the int32 range (and +-Inf) the QPU gives 0 (QPU.md).
    return tuple(
        int(x) & 0xFFFFFFFF if -2147483648.0 <= x < 2147483648.0 else 0 for x in _floats(a)
    )


def _itof(a: tuple[int, ...], _b: tuple[int, ...]) -> tuple[int, ...]:
    # Rounds toward zero like fadd (QPU.md); an int32 is exact in a double.
    return _round_toward_zero(tuple(float(x - (x >> 31 << 32)) for x in a))


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
    7: _ftoi,
    8: _itof,
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
FLOAT_ADD_OPS = {1, 2, 8}
NOP = 39  # the read/write address that reads 0 and writes nowhere
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
    waddr_add: int = NOP
    waddr_mul: int = NOP
    op_add: int = 0
    op_mul: int = 0
    raddr_a: int = NOP
    raddr_b: int = NOP
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
        if waddr_add != NOP or waddr_mul != NOP:
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
            if waddr_add != NOP or waddr_mul != NOP or sf:
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
