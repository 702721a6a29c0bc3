"""`netroot versions`, `verify`, `prune`: the export tree's housekeeping (`export` itself is
netroot.cli.export_cmd, whose export root and servers these share)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from netroot.cli.context import JSON_OPTION, AppContext, epilog
from netroot.cli.export_cmd import (
    NAME_ARGUMENT,
    ROOT_OPTION,
    inventory_or_none,
    open_roots,
    root_path,
)
from netroot.cli.export_upkeep import protection_of, repair_command, show_prune
from netroot.errors import Exit, NetrootError, UsageError

if TYPE_CHECKING:
    from netroot.export.manifest import Layout


def _existing(app: AppContext, root: Path | None, name: str) -> Layout:
    """The layout of an export name that exists; a usage error naming it otherwise."""
    from netroot.export.manifest import Layout, check_name

    layout = Layout(root_path(app, root), check_name(name))
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
    app, several, server = open_roots(ctx, root)
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
    app, several, server = open_roots(ctx, root)
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

        manifest, differences = service.verify(root_path(app, root), name, vid)
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

    app, several, server = open_roots(ctx, root)
    protection = protection_of(inventory_or_none(app), name)
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
