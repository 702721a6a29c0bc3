"""A VideoCore IV QPU assembler: one function per instruction form, every field named and checked.

Encodings follow Broadcom's "VideoCore IV 3D Architecture Reference Guide" (section 3, QPU
instruction encoding). A 64-bit instruction is stored low word first; bit numbers below are of
the 64-bit value. Cross-checked against the public encoders of QPULib (Target/Encode.cpp) and
py-videocore (videocore/assembler.py); the code here is our own.

Pure and stdlib-only: the smoke program embeds the words this module produces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --- signals (bits 63:60) -------------------------------------------------------------------
SIG_BREAKPOINT = 0
SIG_NONE = 1
SIG_THREAD_SWITCH = 2
SIG_THREAD_END = 3  # "program end": two more instructions (delay slots) execute after it
SIG_SMALL_IMM = 13  # raddr_b holds a small-immediate code; mux 7 reads it
SIG_LOAD_IMM = 14  # load immediate and semaphore forms
SIG_BRANCH = 15  # three delay slots

# --- add ALU opcodes (bits 28:24) ------------------------------------------------------------
ADD_OPS = {
    "nop": 0, "fadd": 1, "fsub": 2, "fmin": 3, "fmax": 4, "fminabs": 5, "fmaxabs": 6,
    "ftoi": 7, "itof": 8, "add": 12, "sub": 13, "shr": 14, "asr": 15, "ror": 16, "shl": 17,
    "min": 18, "max": 19, "and": 20, "or": 21, "xor": 22, "not": 23, "clz": 24,
    "v8adds": 30, "v8subs": 31,
}  # fmt: skip
# --- mul ALU opcodes (bits 31:29) ------------------------------------------------------------
MUL_OPS = {
    "nop": 0, "fmul": 1, "mul24": 2, "v8muld": 3, "v8min": 4, "v8max": 5, "v8adds": 6,
    "v8subs": 7,
}  # fmt: skip

# --- write conditions (cond_add 51:49, cond_mul 48:46) --------------------------------------
COND = {"never": 0, "always": 1, "zs": 2, "zc": 3, "ns": 4, "nc": 5, "cs": 6, "cc": 7}
# --- branch conditions (cond_br 55:52) -------------------------------------------------------
BRANCH_COND = {
    "allz": 0, "allnz": 1, "anyz": 2, "anynz": 3, "alln": 4, "allnn": 5, "anyn": 6,
    "anynn": 7, "allc": 8, "allnc": 9, "anyc": 10, "anync": 11, "always": 15,
}  # fmt: skip

# --- input muxes (add_a, add_b, mul_a, mul_b) -----------------------------------------------
MUX_R0, MUX_R1, MUX_R2, MUX_R3, MUX_R4, MUX_R5, MUX_A, MUX_B = range(8)

# --- read addresses (raddr_a / raddr_b); 0-31 are the physical register files -------------
R_UNIFORM = 32  # each read pops the next uniform
R_ELEM_NUM = 38  # regfile A: element number; regfile B: QPU number
R_QPU_NUM = 38
R_NOP = 39  # reads 0
R_VPM = 48  # VPM read (generic block setup)
R_VDR_WAIT = 50  # regfile A: wait for DMA load (VPM_LD_WAIT)
R_VDW_WAIT = 50  # regfile B: wait for DMA store (VPM_ST_WAIT)
R_MUTEX = 51  # acquire the mutex (stalls until acquired)

# --- write addresses (waddr_add / waddr_mul); regfile A side unless ws swaps -----------------
W_R0, W_R1, W_R2, W_R3 = 32, 33, 34, 35
W_HOST_INT = 38
W_NOP = 39
W_VPM = 48  # VPM write (generic block setup)
W_VPM_SETUP = 49  # regfile A: VPMVCD_RD_SETUP; regfile B: VPMVCD_WR_SETUP
W_DMA_ADDR = 50  # regfile A: VPM_LD_ADDR (start DMA load); regfile B: VPM_ST_ADDR (store)
W_MUTEX = 51  # release the mutex

# Small immediates (sig 13): code -> 32-bit value; 0..15, -16..-1, 1.0..128.0, 1/256..1/2.
SMALL_IMM_INT = {i: i for i in range(16)} | {i - 32: i for i in range(16, 32)}
SMALL_IMM_FLOAT = {float(2**i): 32 + i for i in range(8)} | {2.0**-i: 48 - i for i in range(1, 9)}


class AsmError(ValueError):
    """A field is out of range or an instruction is malformed; the message names the field."""


def _field(name: str, value: int | bool, bits: int) -> int:
    """Check that `value` fits in `bits` unsigned bits; raise AsmError naming the field."""
    number = int(value)
    if isinstance(value, float) or not 0 <= number < (1 << bits):
        raise AsmError(f"field {name}={value!r} does not fit in {bits} bits (0..{(1 << bits) - 1})")
    return number


# --- field layouts: (name, lowest bit, width), high bits first ---------------------------------
# The encoders below and `decode` read these same tables, so a field's place is written once.
# The keyword parameters of each encoder are named after its fields.
_Layout = tuple[tuple[str, int, int], ...]
_FIELDS_HIGH: _Layout = (
    ("sig", 60, 4), ("unpack", 57, 3), ("pm", 56, 1), ("pack", 52, 4), ("cond_add", 49, 3),
    ("cond_mul", 46, 3), ("sf", 45, 1), ("ws", 44, 1), ("waddr_add", 38, 6),
    ("waddr_mul", 32, 6),
)  # fmt: skip
_FIELDS_ALU: _Layout = (
    *_FIELDS_HIGH, ("op_mul", 29, 3), ("op_add", 24, 5), ("raddr_a", 18, 6),
    ("raddr_b", 12, 6), ("add_a", 9, 3), ("add_b", 6, 3), ("mul_a", 3, 3), ("mul_b", 0, 3),
)  # fmt: skip
_FIELDS_LOAD_IMM: _Layout = (*_FIELDS_HIGH, ("value", 0, 32))
_FIELDS_SEMAPHORE: _Layout = (*_FIELDS_HIGH, ("sa", 4, 1), ("semaphore", 0, 4))
_FIELDS_BRANCH: _Layout = (
    ("sig", 60, 4), ("cond_br", 52, 4), ("rel", 51, 1), ("reg", 50, 1), ("raddr_a", 45, 5),
    ("ws", 44, 1), ("waddr_add", 38, 6), ("waddr_mul", 32, 6), ("immediate", 0, 32),
)  # fmt: skip


def _encode(layout: _Layout, values: dict[str, int | bool]) -> int:
    """The instruction with each field of `layout` set from `values`, every one range-checked
    (in layout order, so the first field out of range is the one named)."""
    word = 0
    for name, lo, bits in layout:
        word |= _field(name, values[name], bits) << lo
    return word


def alu(
    *, sig: int = SIG_NONE, unpack: int = 0, pm: int = 0, pack: int = 0,
    cond_add: int = COND["never"], cond_mul: int = COND["never"], sf: int = False,
    ws: int = False, waddr_add: int = W_NOP, waddr_mul: int = W_NOP, op_mul: int = 0,
    op_add: int = 0, raddr_a: int = R_NOP, raddr_b: int = R_NOP, add_a: int = 0,
    add_b: int = 0, mul_a: int = 0, mul_b: int = 0,
) -> int:  # fmt: skip
    """ALU instruction (add and mul op dual-issued). `sig` must be an ALU signal, not 14/15."""
    fields = dict(locals())  # exactly the keyword parameters: nothing else is bound yet
    if sig in (SIG_LOAD_IMM, SIG_BRANCH):
        raise AsmError(f"field sig={sig} is not an ALU signal (use load_imm32/semaphore/branch)")
    return _encode(_FIELDS_ALU, fields)


def load_imm32(
    *, value: int, pm: int = 0, pack: int = 0, cond_add: int = COND["always"],
    cond_mul: int = COND["never"], sf: int = False, ws: int = False,
    waddr_add: int = W_NOP, waddr_mul: int = W_NOP,
) -> int:  # fmt: skip
    """Load immediate, 32-bit form (unpack field 0): `value` goes to every lane."""
    return _encode(_FIELDS_LOAD_IMM, {**locals(), "sig": SIG_LOAD_IMM, "unpack": 0})


def semaphore(*, number: int, decrement: bool) -> int:
    """Semaphore instruction (load-immediate form with unpack=4): bit 4 sa, bits 3:0 number.

    Increment blocks while the 4-bit count is 15, decrement blocks while it is 0.
    """
    fields = {
        "sig": SIG_LOAD_IMM, "unpack": 4, "pm": 0, "pack": 0, "cond_add": COND["never"],
        "cond_mul": COND["never"], "sf": False, "ws": False, "waddr_add": W_NOP,
        "waddr_mul": W_NOP, "sa": decrement, "semaphore": number,
    }  # fmt: skip
    return _encode(_FIELDS_SEMAPHORE, fields)


def branch(
    *, cond_br: int, immediate: int, rel: int = True, reg: int = False, raddr_a: int = 0,
    ws: int = False, waddr_add: int = W_NOP, waddr_mul: int = W_NOP,
) -> int:  # fmt: skip
    """Branch: target = address of the branch + 4 instructions + immediate (bytes, if rel)."""
    if not -(1 << 31) <= immediate < (1 << 31):
        raise AsmError(f"field immediate={immediate} does not fit in a signed 32-bit value")
    return _encode(
        _FIELDS_BRANCH, {**locals(), "sig": SIG_BRANCH, "immediate": immediate & 0xFFFFFFFF}
    )


def small_imm_code(value: int | float) -> int:
    """The raddr_b code of a small immediate (integers -16..15, powers of two 1/256..128)."""
    if isinstance(value, float):
        if value not in SMALL_IMM_FLOAT:
            raise AsmError(f"small immediate {value!r} is not a power of two in 1/256..128")
        return SMALL_IMM_FLOAT[value]
    if value not in SMALL_IMM_INT:
        raise AsmError(f"small immediate {value!r} is outside -16..15")
    return SMALL_IMM_INT[value]


def split(word: int) -> tuple[int, int]:
    """(low, high) 32-bit words in memory order."""
    return word & 0xFFFFFFFF, word >> 32


def to_words32(words: list[int]) -> list[int]:
    """Flatten 64-bit instructions to 32-bit words, low word first."""
    return [half for word in words for half in split(word)]


def decode(word: int) -> dict[str, int]:
    """Split a 64-bit instruction into its named fields (form chosen by sig/unpack)."""
    sig = word >> 60
    if sig == SIG_BRANCH:
        layout = _FIELDS_BRANCH
    elif sig == SIG_LOAD_IMM:
        semaphore_form = (word >> 57) & 0x7 == 4
        layout = _FIELDS_SEMAPHORE if semaphore_form else _FIELDS_LOAD_IMM
    else:
        layout = _FIELDS_ALU
    return {name: (word >> lo) & ((1 << n) - 1) for name, lo, n in layout}


@dataclass
class Program:
    """A sequence of instructions with labels; branches to labels are patched by `words()`."""

    items: list[int] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    fixups: dict[int, tuple[str, int]] = field(default_factory=dict)

    def emit(self, word: int) -> None:
        """Append one encoded instruction."""
        self.items.append(word)

    def label(self, name: str) -> None:
        """Name the address of the next instruction."""
        if name in self.labels:
            raise AsmError(f"label {name!r} defined twice")
        self.labels[name] = len(self.items)

    def branch_to(self, name: str, cond_br: str) -> None:
        """Relative branch to a label; the three following instructions are delay slots."""
        if cond_br not in BRANCH_COND:
            raise AsmError(f"branch condition {cond_br!r} unknown; one of {sorted(BRANCH_COND)}")
        self.fixups[len(self.items)] = (name, BRANCH_COND[cond_br])
        self.items.append(0)

    def words(self) -> list[int]:
        """The encoded program with every branch offset resolved."""
        out = list(self.items)
        for index, (name, cond) in self.fixups.items():
            if name not in self.labels:
                raise AsmError(f"branch to undefined label {name!r}")
            offset = (self.labels[name] - (index + 4)) * 8
            out[index] = branch(cond_br=cond, immediate=offset)
        return out
