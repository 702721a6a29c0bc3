"""What a board runs, read from the board in one SSH round trip: the probe and its parser."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from netroot import bootmode
from netroot.adapters.ssh import Session, Unreachable, sudo_refused
from netroot.bootmode import BootMode
from netroot.inventory import Board
from netroot.sshtarget import target_for

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


def observe(board: Board) -> tuple[BoardFacts | None, str]:
    try:
        with Session(target_for(board.host), connect_timeout=10) as session:
            res = session.run_privileged(PROBE, timeout=60)
        stderr = res.stderr.decode(errors="replace")
        refused = sudo_refused(session.target, res.rc, stderr)
        if refused:
            return None, refused
        return parse_probe(res.stdout.decode(errors="replace"), board.mode), ""
    except Unreachable as exc:
        return None, exc.message


def observe_all(boards: list[Board]) -> dict[str, tuple[BoardFacts | None, str]]:
    """Observe every board in parallel (SSH round trips are slow on TCG boards)."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(boards)))) as pool:
        return dict(zip((b.name for b in boards), pool.map(observe, boards), strict=True))
