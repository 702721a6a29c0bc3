"""The status probe's one SSH round trip per board, all boards in parallel (the IO half of
fleet/boardfacts.py).

One ssh process a board, no multiplexing master: a master is a second process and its close a
third, for one command (bench/README.md, "A classroom at scale on light boards").
"""

from __future__ import annotations

from netroot.adapters.become import sudo_refused
from netroot.adapters.ssh import Session, Unreachable
from netroot.adapters.sshproc import each_host
from netroot.fleet.boardfacts import PROBE, BoardFacts, parse_probe
from netroot.inventory import Board
from netroot.sshtarget import target_for


def observe(board: Board) -> tuple[BoardFacts | None, str]:
    try:
        # PROBE ends in `true`: an exit status 255 is ssh's own (what multiplex=False asks).
        with Session(target_for(board.host), multiplex=False) as session:
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
    return dict(zip((b.name for b in boards), each_host(observe, boards, 16), strict=True))
