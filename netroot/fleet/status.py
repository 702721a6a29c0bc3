"""`netroot status`: what each board runs vs. what it should run and what was recorded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from netroot.fleet.boardfacts import BoardFacts
from netroot.fleet.desired import Desired
from netroot.fleet.events import Event
from netroot.fleet.state import State
from netroot.inventory import Board

if TYPE_CHECKING:
    from netroot.netboot.bootstep import BootStep


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
    server: str = ""  # the NFS server it mounts or boots from (netroot_nfs_server)
    stage: str = ""  # the last stage the event log saw it in (netroot.fleet.events)
    stage_since: float | None = None
    # A diskless board found unreachable: its newest boot step in its NFS server's records
    # (netroot.netboot.bootstage), as one line; the stage's name (a DHCP message, tftp-sent,
    # ..., or nfs: its root mounted after them) and time; whether it holds an NFS connection
    # to the server now. "" / None for any other board.
    boot_stage: str = ""
    boot_event: str = ""
    boot_since: float | None = None
    boot_nfs: bool | None = None

    @property
    def stuck(self) -> bool:
        """Unreachable, and its last stage in the event log was not an ending: where it
        stopped is `stage` (a diskless board's boot, `boot_stage`, is said whatever this is)."""
        return not self.reachable and self.stage in ("switching", "smoking", "assigned")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _drift(should: str | None, facts: BoardFacts | None) -> str:
    if facts is None:
        return "unknown (unreachable)"
    return facts.mode.drift(should, facts.assigned, facts.mounted)


def board_status(
    boards: list[Board],
    state: State,
    observed: Mapping[str, tuple[BoardFacts | None, str]],
    desired: Mapping[str, Desired],
    down: Mapping[str, str] | None = None,
    last: Mapping[str, Event] | None = None,
) -> list[BoardStatus]:
    """Combine inventory, recorded state and observed facts (pure).

    down: NFS servers that could not be read (server -> why): their boards' drift says so.
    last: each board's latest event (its last stage seen, and when).
    """
    rows = []
    last = last or {}
    for board in boards:
        st = state.boards.get(board.name)
        facts, error = observed[board.name]
        should = desired[board.name].version
        drift = _drift(should, facts)
        if down and board.server in down:
            drift = f"its NFS server {board.server} cannot be read: {down[board.server]}"
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
                drift=drift,
                error=error,
                server=board.server,
                stage=last[board.name].event if board.name in last else "",
                stage_since=last[board.name].time if board.name in last else None,
            )
        )
    return rows


def with_boot(rows: list[BoardStatus], steps: Mapping[str, BootStep | str]) -> list[BoardStatus]:
    """The rows, each unreachable diskless board's with its server's boot step (or why the
    server could not tell) merged in (pure)."""
    merged = []
    for row in rows:
        step = steps.get(row.board)
        if row.reachable or step is None:
            merged.append(row)
        elif isinstance(step, str):
            merged.append(replace(row, boot_stage=f"its server's boot log: {step}"))
        else:
            merged.append(replace(row, boot_stage=step.describe(), boot_event=step.stage,
                                  boot_since=step.since, boot_nfs=step.nfs))  # fmt: skip
    return merged
