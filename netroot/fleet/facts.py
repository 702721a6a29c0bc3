"""What a board runs, read from the board in one SSH round trip: the probe and its parser."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from netroot.adapters.ssh import Session, Unreachable, sudo_refused
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
    netboot: bool = False


def parse_probe(text: str, netboot: bool = False) -> BoardFacts:
    """Parse PROBE's output (pure): first word of each sd part, or None when empty; for a
    netboot board the version on its kernel command line (nfsroot=...)."""
    parts = [*text.split(MARK), "", ""]
    if netboot:
        # Only here: the module brings the template renderer (jinja2) an sd board never needs.
        from netroot.netboot.cmdline import booted_version

        return BoardFacts(None, booted_version(parts[2]), netboot=True)

    def word(part: str) -> str | None:
        words = part.split()
        return words[0] if words else None

    return BoardFacts(word(parts[0]), word(parts[1]))


def observe(board: Board) -> tuple[BoardFacts | None, str]:
    try:
        with Session(target_for(board.host), connect_timeout=10) as session:
            res = session.run_privileged(PROBE, timeout=60)
        stderr = res.stderr.decode(errors="replace")
        refused = sudo_refused(session.target, res.rc, stderr)
        if refused:
            return None, refused
        return parse_probe(res.stdout.decode(errors="replace"), board.netboot), ""
    except Unreachable as exc:
        return None, exc.message


def observe_all(boards: list[Board]) -> dict[str, tuple[BoardFacts | None, str]]:
    """Observe every board in parallel (SSH round trips are slow on TCG boards)."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(boards)))) as pool:
        return dict(zip((b.name for b in boards), pool.map(observe, boards), strict=True))
