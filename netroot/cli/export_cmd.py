"""`netroot export`: an image becomes a version in the export tree (the housekeeping commands
of that tree are netroot.cli.versions_cmd)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from netroot.cli import interrupted
from netroot.cli.context import JSON_OPTION, AppContext, epilog, get, name_option
from netroot.cli.export_upkeep import (
    REPAIR_HELP,
    run_repair,
)
from netroot.errors import UsageError

if TYPE_CHECKING:
    pass

DEFAULT_ROOT = Path("/srv/netroot")
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


def inventory_or_none(app: AppContext) -> Any:
    from netroot.inventory import default_path

    if app.inventory_path is None and not default_path().exists():
        return None  # no inventory at all is fine here: the built-in default applies
    return app.inventory()


def root_path(app: AppContext, root: Path | None) -> Path:
    if root is not None:
        return root
    inv = inventory_or_none(app)
    if inv is not None and inv.servers:
        if inv.server.remote:
            raise UsageError(
                f"the export root of {inv.server.name} is on that server "
                "(netroot_export_remote: true): this command reads a local one",
                "run it on the server, or pass --root DIR for a local export root",
            )
        return Path(inv.server.export_root)
    return DEFAULT_ROOT


def _where(app: AppContext, root: Path | None) -> tuple[list[Any], Any]:
    """Where the export tree is, as (several, server): the inventory's NFS servers when it
    lists several and no --root is given (each is worked on: netroot.cli.several); else its
    one server when exports go to it over SSH (netroot_export_remote); ([], None): one local
    export root (`root_path`)."""
    inv = None if root is not None else inventory_or_none(app)
    if inv is None or not inv.servers:
        return [], None
    if len(inv.servers) >= 2:
        return list(inv.servers.values()), None
    return [], inv.server if inv.server.remote else None


def open_roots(ctx: typer.Context, root: Path | None) -> tuple[AppContext, list[Any], Any]:
    """The opening of `versions`, `verify` and `prune`: the context, and where the tree is."""
    app = get(ctx)
    return (app, *_where(app, root))


def _protected(app: AppContext, name: str) -> set[str]:
    """Versions a board of NAME should run, is assigned, has mounted or last ran green."""
    inv = inventory_or_none(app)
    if inv is None or not inv.servers:
        return set()
    from netroot.fleet.remote import open_fleet

    return open_fleet(inv).protected(name)


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
    from netroot.export import service

    app = get(ctx)
    several, server = _where(app, root)
    # Several servers: each its own root (netroot.cli.several); else the one root.
    export_root = (
        DEFAULT_ROOT if several else Path(server.export_root) if server else root_path(app, root)
    )
    with _progress(app) as bar:
        # The bar is up while the source is read to identify it (a whole archive is hashed).
        info, apply = open_source(source, "docker-export" if stream else "auto", bar.callback)
        name = name or name_for(source, info)
        protected = _protected(app, name) if keep else set()
        bar.total(info.size)
        if repair:
            from netroot.cli.several import servers_for_image

            places = servers_for_image(app.inventory(), name) if several else [server]
            return run_repair(
                app, places, export_root, info, apply, name, keep_host_keys, bar.callback, as_json
            )
        if several:
            from netroot.cli import several as on_several
            from netroot.export.fanout import Options

            fan = Options(True, keep, keep_host_keys, frozenset(protected), bar.callback)
            targets = on_several.servers_for_image(app.inventory(), name)
            return on_several.export(app, targets, info, apply, name, fan, as_json)
        options: dict[str, Any] = {
            "keep": keep,
            "keep_host_keys": keep_host_keys,
            "protected": protected,
            "progress": bar.callback,
        }
        sent: dict[str, Any] = {}
        if server is not None:
            from netroot.export.remote import export_remote

            app.on_interrupt = interrupted.on_server(name)
            remote = export_remote(info, apply, server, name, **options)
            result = remote.result
            sent = {"server": server.name, "bytes_sent": remote.bytes_sent}
        else:
            app.on_interrupt = interrupted.committed_since(export_root, name)
            result = service.export(info, apply, export_root, name, **options)
    m = result.manifest
    if result.noop:
        app.out.info(f"{name} {m.version} is already exported (no-op)")
    summary = (
        m.summary()
        | {
            "noop": result.noop,
            "current": m.version,
            "switched": result.switched,
            "pruned": result.pruned,
            "seconds": round(result.seconds, 3),
            "path": str(export_root / name / "versions" / m.version),
        }
        | sent
    )
    if as_json:
        app.out.json(summary)
        return
    rows: list[list[object]] = [
        ["version", m.version],
        ["state", "already exported (no-op)" if result.noop else "new version"],
        ["current", f"-> versions/{m.version}" + ("" if result.switched else " (unchanged)")],
        ["source", f"{m.source['kind']} {m.source['ref']}"],
        ["image id", m.image_id],
        ["files", m.files],
        ["bytes", m.bytes],
        ["reused", f"{m.reused_files} files from {m.reused_from or '-'}"],
        ["tree hash", m.tree_hash],
        ["leftovers", "; ".join(f"{c['path']} {c['action']}" for c in m.leftovers) or "-"],
        ["path", summary["path"]],
        ["seconds", summary["seconds"]],
    ]
    if sent:
        rows[-2:-1] = [["path", f"{sent['server']}:{summary['path']}"]]
        rows.append(["sent", f"{sent['bytes_sent']} bytes over SSH (rsync)"])
    if result.pruned:
        rows.append(["pruned", ", ".join(result.pruned)])
    app.out.table(f"export {name}", ["field", "value"], rows)


def register(app: typer.Typer) -> None:
    app.command(short_help="Export an image as a new version and make it current.",
                epilog=EXPORT_EPILOG)(export)  # fmt: skip
