"""What a board runs: the probe sent to it and the parser of its output (pure; the round trip
itself is fleet/probe.py)."""

from __future__ import annotations

from dataclasses import dataclass

from netroot import bootmode
from netroot.bootmode import BootMode

# One round trip for either boot mode: an sd board's two files, a netboot board's kernel command
# line, separated by marker lines (a board may lack any of them).
MARK = "--netroot--"
PROBE = (
    f"cat /etc/netroot/assigned 2>/dev/null; echo '{MARK}'; "
    f"cat /run/netroot/mounted 2>/dev/null; echo '{MARK}'; cat /proc/cmdline 2>/dev/null; true"
)


@dataclass(frozen=True)
class BoardFacts:
    assigned: str | None  # sd: what it was provisioned with; netboot: None (its TFTP link says)
    mounted: str | None  # sd: what netroot-mount mounted; netboot: the version it booted
    boot: str = bootmode.DEFAULT  # the board's boot mode, which read the probe

    @property
    def mode(self) -> BootMode:
        return bootmode.of(self.boot)


def parse_probe(text: str, mode: BootMode | None = None) -> BoardFacts:
    """Parse PROBE's output (pure); the board's boot mode says which parts count."""
    mode = mode or bootmode.of(bootmode.DEFAULT)
    parts = [*text.split(MARK), "", ""]
    assigned, mounted = mode.read_probe(parts[0], parts[1], parts[2])
    return BoardFacts(assigned, mounted, boot=mode.name)
