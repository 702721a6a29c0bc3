"""Raspberry Pi board revision codes, decoded for S1 (pure, stdlib-only, bundled).

New-style codes (bit 23 set): type in bits 4-11, processor in 12-15, memory in 20-22
(Raspberry Pi documentation, "Raspberry Pi revision codes"); bit 31 is a warranty flag.
"""

from __future__ import annotations

BOARD_TYPES = {
    0x00: "A", 0x01: "B", 0x02: "A+", 0x03: "B+", 0x04: "2B", 0x06: "CM1", 0x08: "3B",
    0x09: "Zero", 0x0A: "CM3", 0x0C: "Zero W", 0x0D: "3B+", 0x0E: "3A+", 0x10: "CM3+",
    0x11: "4B", 0x12: "Zero 2 W", 0x13: "400", 0x14: "CM4", 0x15: "CM4S", 0x17: "5",
}  # fmt: skip
PROCESSORS = {0: "BCM2835", 1: "BCM2836", 2: "BCM2837", 3: "BCM2711", 4: "BCM2712"}


def describe_revision(rev: int) -> tuple[str, int | None, int | None]:
    """(description, board type, processor) of a board revision code (bit 31 masked)."""
    rev &= 0x7FFFFFFF
    if not rev & (1 << 23):
        return f"old-style revision 0x{rev:x} (BCM2835)", None, 0
    kind, proc = (rev >> 4) & 0xFF, (rev >> 12) & 0xF
    mem_mb = 256 << ((rev >> 20) & 7)
    name = BOARD_TYPES.get(kind, f"type 0x{kind:02x}")
    return (
        (
            f"Raspberry Pi {name}, {PROCESSORS.get(proc, f'processor {proc}')}, {mem_mb} MB "
            f"(revision 0x{rev:06x})"
        ),
        kind,
        proc,
    )
