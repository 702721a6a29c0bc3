"""`netroot export`: an image becomes a version in the export tree (the housekeeping commands
of that tree are netroot.cli.versions_cmd)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from netroot.cli.context import JSON_OPTION, AppContext, epilog, get, name_option
from netroot.cli.export_upkeep import REPAIR_HELP, protection_of

if TYPE_CHECKING:
    from netroot.export.place import Place, View
    from netroot.inventory import Inventory

ROOT_HELP = (
    "Export root (default: the inventory's NFS server netroot_export_root, else /srv/netroot)."
)
ROOT_OPTION: Path | None = typer.Option(None, "--root", help=ROOT_HELP)
NAME_ARGUMENT: str = typer.Argument(..., help="Export name.")  # versions, prune
EXPORT_EPILOG = epilog(
    [
        ("netroot export raspbian:2026-12", "from the local Docker engine"),
        ("netroot export rootfs.tar --name raspbian --keep 5", ""),
        ("netroot export raspbian:2026-12 --root /srv/netroot --json", ""),
    ],
    "0 exported (or already there), 1 failed (current unchanged), 2 bad input "
    "(unknown image, not a tar, unsafe archive member, unwritable root), 5 Docker engine "
    "unreachable or disk full. A remote export root (netroot_export_remote) adds: 3 the tree "
    "sent differs from its manifest on the server, 4 server unreachable over SSH. 6 another "
    "export or prune of that name runs (here or there; it is named). 130 interrupted: stderr "
    "says whether the version was committed (it is, only once its manifest is renamed in). "
    "With several NFS servers the version goes to each server "
    "serving a board of the image (all at once); one that fails exits with its code once the "
    "others are done (their `current` moved). --repair: 0 put back (or not damaged), 3 the "
    "source does not give the version's tree there (nothing changed) or paths still differ, "
    "2 no such version to repair.",
)


def inventory_or_none(app: AppContext) -> Inventory | None:
    from netroot.inventory import default_path

    if app.inventory_path is None and not default_path().exists():
        return None  # no inventory at all is fine here: the built-in default applies
    return app.inventory()


def open_place(app: AppContext, root: Path | None) -> Place:
    """Where the export tree is: --root DIR, else the inventory's NFS servers (one object,
    chosen once by netroot.fleet.where.open_place)."""
    from netroot.fleet.where import open_place as choose

    return choose(inventory_or_none(app), root)


def show(app: AppContext, view: View, as_json: bool) -> None:
    """Print an answer's view (netroot.export.place.View), then raise its error if any."""
    from netroot.export.place import Table

    for note in view.notes:
        app.out.info(note)
    if as_json:
        app.out.json(view.json)
    for item in [] if as_json else view.shown:
        if isinstance(item, Table):
            app.out.table(item.title, item.columns, item.rows)
        elif item.status:
            app.out.info(item.text)
        else:
            app.out.out.print(item.text, highlight=False, markup=False)
    if view.error is not None:
        raise view.error


class _Bar:
    """The export's progress on stderr: live from the first read of the source to the end."""

    def __init__(self, bar: Any = None) -> None:
        self._bar = bar
        self._task = bar.add_task("export", total=None, files=0) if bar is not None else None

    def total(self, size: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, total=size or None, completed=0)

    def update(self, done: int, files: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, files=files)

    @property
    def callback(self) -> Callable[[int, int], None] | None:
        return self.update if self._bar is not None else None


@contextmanager
def _progress(app: AppContext) -> Iterator[_Bar]:
    if not app.out.show_progress:
        yield _Bar()
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    with Progress(
        TextColumn("export"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TextColumn("{task.fields[files]} files"),
        TimeElapsedColumn(),
        console=app.out.err,
        transient=True,
    ) as bar:
        yield _Bar(bar)


def export(
    ctx: typer.Context,
    source: str = typer.Argument(
        ..., help="Image in the local engine (repo:tag or id), or a rootfs / docker-save tar."
    ),
    name: str | None = typer.Option(
        None, "--name", callback=name_option, help="Export name (default: repository)."
    ),
    root: Path | None = ROOT_OPTION,
    keep: int | None = typer.Option(None, "--keep", min=1, help="Then prune to N versions."),
    keep_host_keys: bool = typer.Option(
        False, "--keep-host-keys", help="Keep baked SSH host keys (shared by every board)."
    ),
    stream: bool = typer.Option(
        False,
        "--stream",
        help="Read the image through `docker export` even when its layer "
        "dirs are readable (slower; same result).",
    ),
    repair: bool = typer.Option(False, "--repair", help=REPAIR_HELP),
    as_json: bool = JSON_OPTION,
) -> None:
    """Export an image's filesystem as a new verified version; switch `current` to it.

    This is a release: boards never assigned a version (by a rollout or rollback) and not
    pinned follow `current` on their next `netroot provision`. `netroot rollout` exports
    without moving `current`, and moves it only once every board it targeted runs the new
    version, smoked green.
    """
    from netroot.cli.source import name_for, open_source
    from netroot.export.request import ExportOptions

    app = get(ctx)
    place = open_place(app, root)
    with _progress(app) as bar:
        # The bar is up while the source is read to identify it (a whole archive is hashed).
        found = open_source(source, "docker-export" if stream else "auto", bar.callback)
        name = name or name_for(source, found.info)
        protected = frozenset(protection_of(inventory_or_none(app), name) if keep else ())
        bar.total(found.info.size)
        options = ExportOptions(True, keep, keep_host_keys, protected, bar.callback)
        if repair:
            return show(app, place.repair(found, name, options).view(), as_json)
        app.on_interrupt = place.interrupted(name) or app.on_interrupt
        done = place.export(found, name, options)
    show(app, done.view(), as_json)


def register(app: typer.Typer) -> None:
    app.command(short_help="Export an image as a new version and make it current.",
                epilog=EXPORT_EPILOG)(export)  # fmt: skip
