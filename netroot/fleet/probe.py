"""The status probe's one SSH round trip per board, all boards in parallel (the IO half of
fleet/boardfacts.py).

One ssh process a board, no multiplexing master: a master is a second process and its close a
third, for one command (bench/README.md, "A classroom at scale on light boards").
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from netroot import threadwait
from netroot.adapters.become import sudo_refused
from netroot.adapters.ssh import Session, Unreachable, end_all
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
    pool = ThreadPoolExecutor(max_workers=max(1, min(16, len(boards))))
    try:
        # Not pool.map: its wait would not notice a Ctrl-C a worker thread took (threadwait).
        seen = threadwait.results([pool.submit(observe, b) for b in boards])
        found = dict(zip((b.name for b in boards), seen, strict=True))
    except BaseException:
        # Ctrl-C: do not wait for the probes still waiting on a silent host (up to a minute),
        # nor leave their ssh behind (each in a session of its own, out of the keyboard's reach).
        pool.shutdown(wait=False, cancel_futures=True)
        end_all()
        raise
    pool.shutdown()
    return found
