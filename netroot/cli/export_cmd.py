"""`netroot export`, `versions`, `verify`, `prune`: the versioned export tree."""

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
    protection_of,
    repair_command,
    run_repair,
    show_prune,
)
from netroot.errors import Exit, NetrootError, UsageError

if TYPE_CHECKING:
    from netroot.export.manifest import Layout

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


def _inventory_or_none(app: AppContext) -> Any:
    from netroot.inventory import default_path

    if app.inventory_path is None and not default_path().exists():
        return None  # no inventory at all is fine here: the built-in default applies
    return app.inventory()


def _root(app: AppContext, root: Path | None) -> Path:
    if root is not None:
        return root
    inv = _inventory_or_none(app)
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
    export root (`_root`)."""
    inv = None if root is not None else _inventory_or_none(app)
    if inv is None or not inv.servers:
        return [], None
    if len(inv.servers) >= 2:
        return list(inv.servers.values()), None
    return [], inv.server if inv.server.remote else None


def _open(ctx: typer.Context, root: Path | None) -> tuple[AppContext, list[Any], Any]:
    """The opening of `versions`, `verify` and `prune`: the context, and where the tree is."""
    app = get(ctx)
    return (app, *_where(app, root))


def _protected(app: AppContext, name: str) -> set[str]:
    """Versions a board of NAME should run, is assigned, has mounted or last ran green."""
    inv = _inventory_or_none(app)
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
        DEFAULT_ROOT if several else Path(server.export_root) if server else _root(app, root)
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


def _existing(app: AppContext, root: Path | None, name: str) -> Layout:
    """The layout of an export name that exists; a usage error naming it otherwise."""
    from netroot.export.manifest import Layout, check_name

    layout = Layout(_root(app, root), check_name(name))
    if not layout.versions.is_dir():
        raise UsageError(
            f"no export named {name!r} under {layout.root}",
            "export one with `netroot export SOURCE --name NAME`, or pass --root",
        )
    return layout


def versions(
    ctx: typer.Context,
    name: str = NAME_ARGUMENT,
    root: Path | None = ROOT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The versions of NAME, oldest first, and which one is current."""
    app, several, server = _open(ctx, root)
    if several:
        from netroot.cli import several as on_several

        return on_several.versions(app, several, name, as_json)
    if server is not None:  # listed on the server, by the export's helper
        from netroot.export.remote import versions_remote

        current, found = versions_remote(server, name)
        where = f"{server.name}:{server.export_root}"
    else:
        from netroot.export import service

        layout = _existing(app, root, name)
        found, current = service.list_versions(layout), service.current_id(layout)
        where = str(layout.root)
    if as_json:
        app.out.json({"name": name, "current": current, "versions": [m.summary() for m in found]})
        return
    app.out.table(
        f"{name} under {where} (* = current)",
        ["", "version", "exported (UTC)", "source", "entries", "MiB"],
        [
            [
                "*" if m.version == current else "",
                m.version,
                m.exported_at[:16].replace("T", " "),
                ",".join(m.repo_tags) or m.source.get("ref", ""),
                m.files,
                f"{m.bytes / 2**20:.1f}",
            ]
            for m in found
        ],
    )


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
    app, several, server = _open(ctx, root)
    name, vid = _split(target)
    if several:
        from netroot.cli import several as on_several

        return on_several.verify(app, several, name, vid, as_json)
    if server is not None:  # re-hashed on the server, by the export's helper
        from netroot.export.remote import verify_remote

        reply = verify_remote(server, name, vid)
        version, files, tree = reply["version"], reply["files"], reply["tree_hash"]
        differences: list[str] = reply["differences"]
        origin = (reply["source"], reply["repo_tags"], reply["image_id"])
    else:
        from netroot.export import service

        manifest, differences = service.verify(_root(app, root), name, vid)
        version, files, tree = manifest.version, manifest.files, manifest.tree_hash
        origin = (manifest.source, manifest.repo_tags, manifest.image_id)
    if as_json:
        app.out.json(
            {
                "name": name,
                "version": version,
                "ok": not differences,
                "tree_hash": tree,
                "differences": differences,
            }
        )
    else:
        for line in differences:
            app.out.out.print(line, highlight=False, markup=False)
        if not differences:
            app.out.info(f"{name}@{version}: ok ({files} entries)")
    if differences:
        command = repair_command(name, version, *origin, root)
        raise NetrootError(
            f"{name}@{version}: {len(differences)} paths differ from the manifest",
            f"put it back in place from its source (boards keep their mounts): {command}",
            Exit.CHECKS,
        )


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
    from netroot.export import onservers, service

    app, several, server = _open(ctx, root)
    protection = protection_of(_inventory_or_none(app), name)
    failed: dict[str, NetrootError] = {}
    if several or server is not None:  # pruned on each server, under the export's lock there
        found = onservers.each(
            several or [server],
            lambda s: onservers.prune_plan_on(s, name, keep, protection, dry_run=dry_run),
        )
        if not several and found.failed:
            raise next(iter(found.failed.values()))
        plans, failed = found.answers, found.failed
    else:
        layout = _existing(app, root, name)
        plan = service.prune_plan(layout.root, name, keep, protection, dry_run=dry_run)
        plans = {str(layout.root): plan}
    show_prune(app, name, plans, failed, dry_run=dry_run, several=bool(several), as_json=as_json)


def register(app: typer.Typer) -> None:
    app.command(short_help="Export an image as a new version and make it current.",
                epilog=EXPORT_EPILOG)(export)  # fmt: skip
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
