"""`netroot status`: per board, reachable, assigned vs mounted version, last smoke, drift."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from netroot.cli.context import JSON_OPTION, AppContext, epilog, get
from netroot.errors import Exit, worst

if TYPE_CHECKING:  # --help imports none of them
    from netroot.fleet.state import State
    from netroot.fleet.status import BoardStatus
    from netroot.inventory import Board, Inventory


def _ago(ts: float | None) -> str:
    if ts is None:
        return "-"
    secs = int(time.time() - ts)
    return f"{secs}s ago" if secs < 120 else f"{secs // 60}m ago"


def _servers(inv: Any, boards: list[Any], down: dict[str, str]) -> dict[str, Any]:
    """Which boards hang off which server, which server is the fleet's home, which is down."""
    home = inv.server.name if inv.servers else None
    return {
        name: {"address": server.address, "home": name == home,
               "boards": [b.name for b in boards if b.server == name]}
        | ({"error": down[name]} if name in down else {})
        for name, server in inv.servers.items()
    }  # fmt: skip


class Seen(NamedTuple):
    """What `status` (and `metrics`) read: the boards, the recorded state, the servers that
    could not be read (server -> why), and each board's row."""

    inventory: Inventory
    boards: list[Board]
    state: State
    down: dict[str, str]
    rows: list[BoardStatus]


def read_status(app: AppContext, targets: list[str] | None) -> Seen:
    """Read the fleet's state and observe every board (one SSH round trip each), then compare
    with the state and the rule. Read-only: never waits for, nor takes, the writer's lock."""
    from netroot.fleet import events as log
    from netroot.fleet.probe import observe_all
    from netroot.fleet.status import board_status, with_boot
    from netroot.fleet.where import open_fleet
    from netroot.netboot.bootstage import boot_steps

    fleet = open_fleet(app.inventory())
    inv = fleet.inventory
    boards = inv.resolve(targets) if targets else list(inv.boards.values())
    state = fleet.load()
    down: dict[str, str] = {}  # a server that is down: its boards' drift says so
    wanted = fleet.desired(boards, state, down)
    last = log.last_by_board(log.parse(fleet.store.read_events()))
    rows = board_status(boards, state, observe_all(boards), wanted, down, last)
    # An unreachable diskless board: where its boot stopped, from its NFS server's own records
    # (a server already found down is not asked again: its boards' drift says why).
    lost = {r.board for r in rows if not r.reachable}
    asked = [b for b in boards if b.name in lost and b.server not in down]
    rows = with_boot(rows, boot_steps(inv, asked))
    return Seen(inv, boards, state, down, rows)


def status(
    ctx: typer.Context,
    targets: list[str] | None = typer.Argument(None, help="Boards or groups (default: all)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """What each board runs vs. what it should run (read-only)."""
    app = get(ctx)
    seen = read_status(app, targets)
    inv, boards, down, rows = seen.inventory, seen.boards, seen.down, seen.rows
    several = len(inv.servers) > 1  # one server: the table as it always was
    if as_json:
        app.out.json(
            {"boards": [r.to_dict() for r in rows], "servers": _servers(inv, boards, down)}
        )
    else:
        app.out.table(
            "boards",
            [
                "board",
                *(["server"] if several else []),
                "reachable",
                "should run",
                "mounted",
                "last smoke",
                "phase",
                "drift",
            ],
            [
                [
                    r.board,
                    *([r.server] if several else []),
                    "yes" if r.reachable else "NO",
                    f"{r.should_run or '-'} ({r.should_run_by})",
                    r.mounted or "-",
                    f"{r.last_smoke or '-'} {_ago(r.last_smoke_time)}",
                    r.phase,
                    r.drift or "ok",
                ]
                for r in rows
            ],
        )
        for r in rows:  # why a board could not be read, under the table (stderr)
            if r.error:
                app.out.info(r.error if r.error.startswith(r.board) else f"{r.board}: {r.error}")
            if r.stuck:  # where it stopped, from the event log
                app.out.info(f"{r.board}: last seen {r.stage} {_ago(r.stage_since)}")
            if r.boot_stage:  # a diskless board: where its boot stopped, from its server
                app.out.info(f"{r.board}: boot: {r.boot_stage}")
    raise typer.Exit(int(_exit_for(rows, down)))


def _exit_for(rows: list[Any], down: dict[str, str]) -> Exit:
    """An unreachable board is data in the table, and the exit code still says 4 (as smoke,
    provision and rollout do); a reachable board off its version is a drift (1)."""
    return worst(
        Exit.OK if not r.drift
        else Exit.UNREACHABLE if not r.reachable or r.server in down
        else Exit.FAILED
        for r in rows
    )  # fmt: skip


EPILOG = epilog(
    [
        ("netroot status", "every board of the inventory"),
        ("netroot status pi-01 pi-02 -i inventory.yml", ""),
        ("netroot status --tsv | cut -f1,4", "scripts: whole cells, one row a line"),
    ],
    "0 every board in line, 1 a reachable board drifts, 2 bad input, 4 a board or its NFS "
    "server could not be reached (the table still shows every board; why, on stderr; 1 "
    "outranks 4).",
)


def register(app: typer.Typer) -> None:
    app.command(short_help="What each board runs vs. what it should run.", epilog=EPILOG)(status)
