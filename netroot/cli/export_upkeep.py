"""The export tree's upkeep: `netroot export SOURCE --repair` (and the command `verify` names
when a version is damaged), and what `prune` says it removed and kept."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netroot.cli.context import AppContext
from netroot.errors import Exit, NetrootError

if TYPE_CHECKING:
    from netroot.export.versiontree import PrunePlan

REPAIR_HELP = (
    "Put a damaged version of SOURCE (as `netroot verify` found it) back as its manifest "
    "records it, in place: damaged files are rewritten in their own inodes, so boards that "
    "have it mounted keep their mounts and read the good bytes. Moves nothing (`current` "
    "stays); refused when SOURCE no longer gives the version's tree."
)


def protection_of(inv: Any, name: str) -> dict[str, list[str]]:
    """The versions of NAME a board needs, each with why (none without an inventory)."""
    if inv is None or not inv.servers:
        return {}
    from netroot.fleet.remote import open_fleet

    return open_fleet(inv).protection(name)


def repair_command(
    name: str,
    version: str,
    source: dict[str, str],
    repo_tags: list[str],
    image_id: str,
    root: Path | None,
) -> str:
    """The command that puts NAME@VERSION back from its source (what `verify` says to run)."""
    from netroot.export.service import planned_version
    from netroot.export.sources import SourceInfo

    kind, ref = source.get("kind", "image"), source.get("ref", "")
    shown = repo_tags[0] if kind == "image" and repo_tags else ref or "SOURCE"
    words = ["netroot", "export", shown, "--name", name, "--repair"]
    info = SourceInfo(kind, ref, image_id)
    if planned_version(info, keep_host_keys=True) == version:
        words.append("--keep-host-keys")
    if root is not None:
        words += ["--root", str(root)]
    return shlex.join(words)


def run_repair(
    app: AppContext,
    places: list[Any],
    root: Path,
    info: Any,
    apply: Callable[[Any], Any],
    name: str,
    keep_host_keys: bool,
    progress: Callable[[int, int], None] | None,
    as_json: bool,
) -> None:
    """Repair NAME's version of the source on each place (NFS servers; [None]: `root`)."""
    from netroot.export.onservers import repair_on

    results = {}
    for server in places:
        where = server.name if server is not None else str(root)
        results[where] = repair_on(server, root, info, apply, name, keep_host_keys, progress)
    if as_json:
        shown = {
            where: {
                "name": name,
                "version": r.manifest.version,
                "repaired": r.done,
                "remaining": r.remaining,
                "seconds": round(r.seconds, 3),
            }
            for where, r in results.items()
        }
        # One export root: its answer; several servers: each one's, by name.
        app.out.json(next(iter(shown.values())) if len(shown) == 1 else shown)
    else:
        for where, r in results.items():
            for line in r.done:
                app.out.out.print(f"{where}: {line}", highlight=False, markup=False)
            state = f"repaired {len(r.done)} paths" if r.done else "not damaged: nothing to do"
            app.out.info(f"{where}: {name}@{r.manifest.version}: {state}")
    left = {w: r.remaining for w, r in results.items() if r.remaining}
    if left:
        where, lines = next(iter(left.items()))
        raise NetrootError(
            f"{where}: {name}: {len(lines)} paths still differ after the repair: "
            + "; ".join(lines[:5]),
            "the export root's disk may be failing; export the image to a new version",
            Exit.CHECKS,
        )


def show_prune(
    app: AppContext,
    name: str,
    plans: dict[str, PrunePlan],
    failed: dict[str, NetrootError],
    *,
    dry_run: bool,
    several: bool,
    as_json: bool,
) -> None:
    """Each export root's prune: every version, removed (or would be) or kept and why."""
    if as_json:
        removed = {w: p.remove for w, p in plans.items()}
        kept = {w: p.kept for w, p in plans.items()}
        one = not several  # one export root: its lists; several: per server, as `versions`
        app.out.json(
            {
                "name": name,
                "dry_run": dry_run,
                "removed": next(iter(removed.values())) if one else removed,
                "kept": next(iter(kept.values())) if one else kept,
            }
            | ({} if one else {"failed": {w: e.message for w, e in failed.items()}})
        )
    else:
        verb = "would remove" if dry_run else "removed"
        for where, plan in plans.items():
            rows: list[list[object]] = [
                [vid, verb if vid in plan.remove else "kept", "; ".join(plan.kept.get(vid, []))]
                for vid in plan.order
            ]
            app.out.table(f"prune {name} on {where}", ["version", "action", "why"], rows)
            app.out.info(f"{where}: {verb} {len(plan.remove)} of {len(plan.order)} versions")
    if failed:
        from netroot.export.fanout import exit_code

        reasons = "; ".join(f"{w}: {e.message}" for w, e in failed.items())
        raise NetrootError(
            f"pruning {name} failed on {', '.join(failed)}: {reasons}",
            "the other servers are done; run the command again once those are back",
            exit_code(failed.values()),
        )
