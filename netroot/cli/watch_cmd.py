"""`netroot events` and `netroot metrics`: the fleet's history and its numbers, for watching it."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import typer

from netroot.cli.context import epilog, get
from netroot.errors import UsageError
from netroot.fsutil import LogCursor

FOLLOW_POLL_S = 2.0


def _since(text: str | None) -> float | None:
    """--since: epoch seconds, an ISO time, or an age like 90s, 15m, 2h, 3d."""
    if text is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    raw = text.strip()
    try:
        if raw[-1:] in units and raw[:-1].replace(".", "", 1).isdigit():
            return time.time() - float(raw[:-1]) * units[raw[-1]]
        if raw.replace(".", "", 1).isdigit():
            return float(raw)
        return datetime.fromisoformat(raw).timestamp()
    except ValueError:
        pass
    raise UsageError(
        f"--since {text!r}: not a time",
        "give an age (90s, 15m, 2h, 3d), an ISO time (2026-12-07T10:00) or epoch seconds",
    )


def events(
    ctx: typer.Context,
    board: str | None = typer.Option(None, "--board", "-b", help="Only this board's events."),
    since: str | None = typer.Option(
        None, "--since", help="From this time on: 15m, 2h, 3d, an ISO time or epoch seconds."
    ),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new events."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object a line on stdout."),
) -> None:
    """The fleet's history: every change and verdict, oldest first.

    Each rollout, rollback, provision and smoke logs what it changed on each board (assigned,
    switching, smoking, ok, failed, unreachable, rolled-back, smoke, good, mounted) and on the
    fleet (rollout started and how it ended, current released), with the reason recorded
    (docs/fleet.md, "Watching the fleet").
    """
    from netroot.fleet import events as log
    from netroot.fleet.where import open_fleet

    app = get(ctx)
    fleet = open_fleet(app.inventory())
    if board is not None and board not in fleet.inventory.boards:
        raise UsageError(
            f"--board {board!r}: no such board in {fleet.inventory.path}",
            "known boards: " + (", ".join(fleet.inventory.boards) or "none"),
        )
    start = _since(since)
    seen: set[str] = set()  # a log rotated twice between two polls is read again whole
    last_time = float("-inf")
    cursor: LogCursor | None = None
    if app.out.tsv and not as_json:
        typer.echo("\t".join(log.TSV_COLUMNS))
    while True:
        text, cursor = fleet.store.read_events_from(cursor)
        for event in log.select(log.parse(text), board, start):
            line = event.to_json()
            if event.time < last_time or line in seen:
                continue
            if as_json:
                typer.echo(line)
            elif app.out.tsv:
                typer.echo(log.tsv(event))
            else:
                typer.echo(log.describe(event))
            if event.time > last_time:
                seen.clear()
                last_time = event.time
            seen.add(line)
        if not follow:
            return
        time.sleep(FOLLOW_POLL_S)


def metrics(
    ctx: typer.Context,
    targets: list[str] | None = typer.Argument(None, help="Boards or groups (default: all)."),
    textfile: Path | None = typer.Option(
        None,
        "--textfile",
        help="Also write DIR/netroot.prom for node_exporter's textfile collector.",
        file_okay=False,
    ),
) -> None:
    """The fleet in Prometheus' text format: per board up, running vs desired, last smoke and
    drift; the last rollout's boards done, failed and remaining.

    Reaches every board as `status` does. With --textfile DIR the same text replaces
    DIR/netroot.prom atomically (node_exporter --collector.textfile.directory=DIR); run it from
    cron or a systemd timer.
    """
    from netroot.cli.status_cmd import read_status
    from netroot.fleet.metrics import TEXTFILE_NAME, render
    from netroot.fsutil import atomic_write

    app = get(ctx)
    if textfile is not None and not textfile.is_dir():
        raise UsageError(f"--textfile {textfile}: not a directory", "create it, or name another")
    seen = read_status(app, targets)
    text = render(seen.rows, seen.state)
    if textfile is not None:
        atomic_write(textfile / TEXTFILE_NAME, text, mode=0o644)
    typer.echo(text, nl=False)


EVENTS_EPILOG = epilog(
    [
        ("netroot events --since 1h", "one line each, oldest first"),
        ("netroot events --board pi-03 --follow", "pi-03's and the fleet's, as they come"),
        ("netroot events --json | jq 'select(.event == \"failed\")'", ""),
    ],
    "0 ok, 2 bad input, 4 the fleet home's server could not be reached.",
)
METRICS_EPILOG = epilog(
    [
        ("netroot metrics", "the fleet's metrics on stdout"),
        ("netroot metrics --textfile /var/lib/node_exporter", "also DIR/netroot.prom"),
    ],
    "0 ok (unreachable boards are netroot_board_up 0), 2 bad input.",
)


def register(app: typer.Typer) -> None:
    app.command(short_help="The fleet's history: every change and verdict.", epilog=EVENTS_EPILOG)(
        events
    )
    app.command(short_help="The fleet as Prometheus metrics.", epilog=METRICS_EPILOG)(metrics)
