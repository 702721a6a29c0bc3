"""`netroot versions`, `verify`, `prune`: the export tree's housekeeping (`export` itself is
netroot.cli.export_cmd, whose export root and servers these share)."""

from __future__ import annotations

from pathlib import Path

import typer

from netroot.cli.context import JSON_OPTION, epilog, get
from netroot.cli.export_cmd import NAME_ARGUMENT, ROOT_OPTION, inventory_or_none, open_place, show
from netroot.cli.export_upkeep import protection_of


def versions(
    ctx: typer.Context,
    name: str = NAME_ARGUMENT,
    root: Path | None = ROOT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The versions of NAME, oldest first, and which one is current."""
    app = get(ctx)
    show(app, open_place(app, root).versions(name).view(), as_json)


def _split(target: str) -> tuple[str, str | None]:
    name, _, vid = target.partition("@")
    return name, vid or None


def verify(
    ctx: typer.Context,
    target: str = typer.Argument(..., help="NAME (its current version) or NAME@ID."),
    root: Path | None = ROOT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Re-hash a version's tree against its manifest; exit 3 with the differing paths."""
    app = get(ctx)
    name, vid = _split(target)
    show(app, open_place(app, root).verify(name, vid, root).view(), as_json)


def prune(
    ctx: typer.Context,
    name: str = NAME_ARGUMENT,
    keep: int = typer.Option(..., "--keep", min=1, help="Versions to keep (newest)."),
    root: Path | None = ROOT_OPTION,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what would be removed and why the rest stays; write nothing."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove all but the newest N versions (never current, nor any a board needs).

    Newest is by the manifest's export time, the same order on every export root. Each kept
    version says why: current, pinned by / assigned to / mounted by / last green on a board,
    or among the N newest.
    """
    app = get(ctx)
    place = open_place(app, root)
    protection = protection_of(inventory_or_none(app), name)
    show(app, place.prune(name, keep, protection, dry_run=dry_run).view(), as_json)


def register(app: typer.Typer) -> None:
    several = (
        " Several NFS servers: each is asked; one that fails exits with its code (4 unreachable)."
    )
    app.command(
        short_help="List an export's versions, oldest first, and its current.",
        epilog=epilog(
            [
                ("netroot versions raspbian", ""),
                ("netroot versions raspbian --tsv | tail -n 1", "the newest, whole"),
            ],
            "0 ok, 2 unknown name, 4 server unreachable." + several,
        ),
    )(versions)
    app.command(
        short_help="Re-hash a version against its manifest (exit 3: it changed).",
        epilog=epilog(
            [
                ("netroot verify raspbian", "its current version"),
                ("netroot verify raspbian@3f2a9c0d1e4b5a6f", ""),
            ],
            "0 tree matches, 3 paths differ (the hint names the command that puts it back: "
            "netroot export SOURCE --name NAME --repair), 2 unknown version, 4 server "
            "unreachable." + several,
        ),
    )(verify)
    app.command(
        short_help="Remove old versions (never current, nor one a board needs).",
        epilog=epilog(
            [
                ("netroot prune raspbian --keep 3", ""),
                ("netroot prune raspbian --keep 3 --dry-run", "what it would remove, and why not"),
            ],
            "0 ok, 1 failed, 2 bad input or unknown name, 6 an export or prune of that name "
            "runs (named)." + several,
        ),
    )(prune)
