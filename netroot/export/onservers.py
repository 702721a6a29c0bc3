"""The export tree's read and housekeeping commands on each NFS server of the inventory.

One server's export root is on this host (read here) or on the server (its helper asked over
SSH, netroot.export.remote); with several servers each is asked at once, in its own thread (a
server that is down costs its SSH timeout once, not once per server before it), and one that
fails is a result beside the others' answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from netroot.errors import NetrootError
from netroot.export import service
from netroot.export.manifest import Layout, Manifest, check_name
from netroot.export.sources import SourceInfo, SourceRead
from netroot.export.versiontree import PrunePlan
from netroot.export.writer import Progress, Writer
from netroot.inventory import NfsServer

T = TypeVar("T")


@dataclass
class PerServer(Generic[T]):
    """Each server's answer, or why it has none."""

    answers: dict[str, T] = field(default_factory=dict)
    failed: dict[str, NetrootError] = field(default_factory=dict)


def each(servers: Sequence[NfsServer], ask: Callable[[NfsServer], T]) -> PerServer[T]:
    """`ask` on every server at once; answers in the servers' order."""
    out: PerServer[T] = PerServer()
    if not servers:
        return out
    with ThreadPoolExecutor(len(servers), thread_name_prefix="netroot-ask") as pool:
        jobs = [(s.name, pool.submit(ask, s)) for s in servers]
        for name, job in jobs:
            try:
                out.answers[name] = job.result()
            except NetrootError as exc:
                out.failed[name] = exc
    return out


def versions_on(server: NfsServer, name: str) -> tuple[str | None, list[Manifest]]:
    """`current` and the committed versions of NAME on a server, oldest first (reads only)."""
    if server.remote:
        from netroot.export.remote import versions_remote

        return versions_remote(server, name)
    layout = Layout(Path(server.export_root), check_name(name))
    return service.current_id(layout), service.list_versions(layout)


@dataclass(frozen=True)
class Verified:
    version: str
    files: int
    tree_hash: str
    differences: list[str]


def verify_on(server: NfsServer, name: str, vid: str | None) -> Verified:
    """Re-hash a version on a server against its manifest there (reads only)."""
    if server.remote:
        from netroot.export.remote import verify_remote

        reply = verify_remote(server, name, vid)
        return Verified(reply["version"], reply["files"], reply["tree_hash"], reply["differences"])
    manifest, differences = service.verify(Path(server.export_root), name, vid)
    return Verified(manifest.version, manifest.files, manifest.tree_hash, differences)


def prune_plan_on(
    server: NfsServer,
    name: str,
    keep: int,
    protected: Mapping[str, Sequence[str]] | set[str],
    *,
    dry_run: bool = False,
) -> PrunePlan:
    """Prune NAME on a server (or with `dry_run` only plan it, writing nothing): what goes,
    and why each other version stays."""
    if server.remote:
        from netroot.export.remote import prune_plan_remote

        return prune_plan_remote(server, name, keep, protected, dry_run=dry_run)
    return service.prune_plan(Path(server.export_root), name, keep, protected, dry_run=dry_run)


def repair_on(
    server: NfsServer | None,
    root: Path,
    info: SourceInfo,
    apply: Callable[[Writer], SourceRead],
    name: str,
    keep_host_keys: bool,
    progress: Progress | None,
) -> service.RepairResult:
    """Put NAME's version of the source back in place where it is damaged: on `server` (over
    SSH when its root is remote), or under `root` when no server is given."""
    options: service.ExportOptions = {"keep_host_keys": keep_host_keys, "progress": progress}
    if server is not None and server.remote:
        from netroot.export.remote import repair_remote

        return repair_remote(info, apply, server, name, **options)
    where = Path(server.export_root) if server is not None else root
    return service.repair(info, apply, where, name, **options)
