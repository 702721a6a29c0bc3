"""`netroot status`: what each board runs vs. what it should run (facts read over SSH)."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from netroot.adapters.ssh import Session, Unreachable, sudo_refused
from netroot.inventory import Board
from netroot.rollout.desired import Desired
from netroot.rollout.state import State
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


@dataclass(frozen=True)
class BoardStatus:
    board: str
    reachable: bool
    should_run: str | None  # the desired version: pin, else assignment, else `current`
    should_run_by: str  # which of those decided it: pin | assigned | current | none
    assigned: str | None  # what the board was provisioned with
    mounted: str | None  # what it actually has mounted
    last_smoke: str | None
    last_smoke_time: float | None
    phase: str
    drift: str  # "" when in line, else what differs
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _drift(should: str | None, facts: BoardFacts | None) -> str:
    if facts is None:
        return "unknown (unreachable)"
    problems = []
    if facts.netboot:
        if facts.mounted is None:
            problems.append(
                "booted no netroot version (no nfsroot=.../versions/ID in /proc/cmdline)"
            )
        elif should and facts.mounted != should:
            problems.append(f"should run {should}, booted {facts.mounted}")
        return "; ".join(problems)
    if facts.mounted is None:
        problems.append("nothing mounted")
    elif facts.assigned and facts.mounted != facts.assigned:
        problems.append(f"mounted {facts.mounted} but assigned {facts.assigned}")
    if should and facts.assigned != should:
        problems.append(f"should run {should}, assigned {facts.assigned}")
    return "; ".join(problems)


def observe(board: Board) -> tuple[BoardFacts | None, str]:
    try:
        with Session(target_for(board.host)) as session:
            res = session.run_privileged(PROBE, timeout=60)
        stderr = res.stderr.decode(errors="replace")
        refused = sudo_refused(session.target, res.rc, stderr)
        if refused:
            return None, refused
        return parse_probe(res.stdout.decode(errors="replace"), board.netboot), ""
    except Unreachable as exc:
        return None, exc.message


def board_status(
    boards: list[Board],
    state: State,
    observed: Mapping[str, tuple[BoardFacts | None, str]],
    desired: Mapping[str, Desired],
) -> list[BoardStatus]:
    """Combine inventory, recorded state and observed facts (pure)."""
    rows = []
    for board in boards:
        st = state.boards.get(board.name)
        facts, error = observed[board.name]
        should = desired[board.name].version
        rows.append(
            BoardStatus(
                board=board.name,
                reachable=facts is not None,
                should_run=should,
                should_run_by=desired[board.name].source,
                assigned=facts.assigned if facts else None,
                mounted=facts.mounted if facts else None,
                last_smoke=st.smoke_status if st else None,
                last_smoke_time=st.smoke_time if st else None,
                phase=st.phase if st else "idle",
                drift=_drift(should, facts),
                error=error,
            )
        )
    return rows


def observe_all(boards: list[Board]) -> dict[str, tuple[BoardFacts | None, str]]:
    """Observe every board in parallel (SSH round trips are slow on TCG boards)."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(boards)))) as pool:
        return dict(zip((b.name for b in boards), pool.map(observe, boards), strict=True))


def collect(boards: list[Board], state: State, desired: Mapping[str, Desired]) -> list[BoardStatus]:
    """Observe every board, then compare with the recorded and desired state."""
    return board_status(boards, state, observe_all(boards), desired)
