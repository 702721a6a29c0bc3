"""Several NFS servers as one place: each holds its own versions and its own `current`.

An export goes to every server that serves a board of the image (netroot.export.fanout); a
read or a prune asks each server at once, in its own thread (a server that is down costs its
SSH timeout once, not once per server before it). A server that fails (down, full) is shown
beside the others' answers and makes the command exit with its code once the others are done:
nothing is undone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from netroot.errors import Exit, NetrootError
from netroot.export.fanout import Fanout, exit_code, export_all
from netroot.export.manifest import Manifest
from netroot.export.place import (
    Checked,
    Listing,
    Protection,
    Pruned,
    Root,
    Table,
    View,
    prune_tables,
    repair_view,
    version_rows,
)
from netroot.export.request import ExportOptions, Source
from netroot.export.verbs import RepairResult
from netroot.export.versiontree import newest_last

T = TypeVar("T")


@dataclass
class PerServer(Generic[T]):
    """Each server's answer, or why it has none."""

    answers: dict[str, T] = field(default_factory=dict)
    failed: dict[str, NetrootError] = field(default_factory=dict)


def each(roots: Mapping[str, Root], ask: Callable[[Root], T]) -> PerServer[T]:
    """`ask` of every server's root at once; answers in the servers' order."""
    out: PerServer[T] = PerServer()
    if not roots:
        return out
    with ThreadPoolExecutor(len(roots), thread_name_prefix="netroot-ask") as pool:
        jobs = [(name, pool.submit(ask, root)) for name, root in roots.items()]
        for name, job in jobs:
            try:
                out.answers[name] = job.result()
            except NetrootError as exc:
                out.failed[name] = exc
    return out


def failure(failed: Mapping[str, NetrootError], what: str) -> NetrootError | None:
    """One error naming every server that failed, with their exit code (None: none did)."""
    if not failed:
        return None
    reasons = "; ".join(f"{n}: {e.message}" for n, e in failed.items())
    return NetrootError(
        f"{what} failed on {', '.join(failed)}: {reasons}",
        "the other servers are done; run the command again once those are back",
        exit_code(failed.values()),
    )


@dataclass(frozen=True)
class Servers:
    """Every NFS server of the inventory, each its root; `serving` maps an export name to
    the servers an export of it goes to (those serving a board of that image, else all)."""

    roots: Mapping[str, Root]
    serving: Callable[[str], Sequence[str]]

    @property
    def where(self) -> str:
        return ", ".join(self.roots)

    def _for(self, name: str) -> dict[str, Root]:
        return {s: self.roots[s] for s in self.serving(name)}

    def export(self, source: Source, name: str, options: ExportOptions) -> ExportedOnServers:
        roots = self._for(name)
        return ExportedOnServers(name, list(roots), export_all(roots, source, name, options))

    def repair(self, source: Source, name: str, options: ExportOptions) -> RepairedOnServers:
        done = {s: r.repair(source, name, options).result for s, r in self._for(name).items()}
        return RepairedOnServers(name, done)

    def versions(self, name: str) -> Listed:
        return Listed(name, list(self.roots), each(self.roots, lambda r: r.versions(name)))

    def verify(self, name: str, vid: str | None, root: Path | None = None) -> CheckedOnServers:
        return CheckedOnServers(name, each(self.roots, lambda r: r.verify(name, vid, root)))

    def prune(
        self, name: str, keep: int, protection: Protection, *, dry_run: bool
    ) -> PrunedOnServers:
        found = each(self.roots, lambda r: r.prune(name, keep, protection, dry_run=dry_run))
        return PrunedOnServers(name, found, dry_run)

    def interrupted(self, name: str) -> None:
        return None  # each server says for itself: `netroot versions NAME`


@dataclass(frozen=True)
class ExportedOnServers:
    """One export to every server serving the image: each one's outcome, then the failures'
    exit code."""

    name: str
    servers: list[str]
    out: Fanout

    def view(self) -> View:
        out, name = self.out, self.name
        rows = {
            s: {"ok": False, "error": out.failed[s].message}
            if s in out.failed
            else {
                "ok": True,
                "noop": out.done[s].noop,
                "switched": out.done[s].switched,
                "pruned": out.done[s].pruned,
                "bytes_sent": out.bytes_sent.get(s),
                "path": out.paths[s],
            }
            for s in self.servers
        }
        summary = out.manifest.summary() if out.done else {"version": out.version}
        table = [
            [
                server,
                "FAILED" if not r["ok"] else "already there" if r["noop"] else "new version",
                "-" if not r["ok"] else "moved" if r["switched"] else "unchanged",
                "-" if r.get("bytes_sent") is None else f"{r['bytes_sent']} bytes",
                r.get("path") or r["error"],
            ]
            for server, r in rows.items()
        ]
        columns = ["server", "state", "current", "sent", "path / error"]
        return View(
            summary | {"current": out.version, "servers": rows},
            shown=[Table(f"export {name} {out.version}", columns, table)],
            error=failure(out.failed, f"export of {name} {out.version}"),
        )


@dataclass(frozen=True)
class Listed:
    """Every version of NAME on any server, and which servers hold it (* = their current)."""

    name: str
    servers: list[str]
    found: PerServer[Listing]

    def view(self) -> View:
        by_id: dict[str, Manifest] = {}
        holders: dict[str, list[str]] = {}
        shown: dict[str, list[str]] = {}
        for server, listing in self.found.answers.items():
            for m in listing.found:
                by_id.setdefault(m.version, m)
                holders.setdefault(m.version, []).append(server)
                mark = "*" if m.version == listing.current else ""
                shown.setdefault(m.version, []).append(server + mark)
        ordered = newest_last(list(by_id.values()))
        per_server = {
            s: {"current": self.found.answers[s].current,
                "versions": [m.version for m in self.found.answers[s].found]}
            if s in self.found.answers
            else {"error": self.found.failed[s].message}
            for s in self.servers
        }  # fmt: skip
        rows = [
            [m.version, *row, " ".join(shown[m.version])]
            for m, row in zip(ordered, version_rows(ordered), strict=True)
        ]
        return View(
            {
                "name": self.name,
                "versions": [m.summary() | {"servers": holders[m.version]} for m in ordered],
                "servers": per_server,
            },
            shown=[
                Table(
                    f"{self.name} on {len(self.servers)} servers (* = that server's current)",
                    ["version", "exported (UTC)", "source", "entries", "MiB", "on"],
                    rows,
                )
            ],
            error=failure(self.found.failed, f"listing {self.name}"),
        )


@dataclass(frozen=True)
class CheckedOnServers:
    """The version re-hashed on every server that holds NAME; exit 3 when any differs."""

    name: str
    found: PerServer[Checked]

    def view(self) -> View:
        name, answers = self.name, self.found.answers
        rows = {s: {"version": v.version, "ok": not v.differences, "tree_hash": v.tree_hash,
                    "differences": v.differences} for s, v in answers.items()}  # fmt: skip
        failed = {s: e.message for s, e in self.found.failed.items()}
        ok = all(r["ok"] for r in rows.values()) and not failed
        view = View({"name": name, "ok": ok, "servers": rows, "failed": failed})
        for server, v in answers.items():
            for line in v.differences:
                view.line(f"{server}: {line}")
            if not v.differences:
                view.info(f"{server}: {name}@{v.version}: ok ({v.files} entries)")
        bad = [s for s, v in answers.items() if v.differences]
        view.error = failure(self.found.failed, f"verifying {name}")
        if bad:
            view.error = NetrootError(
                f"{name}: paths differ from the manifest on {', '.join(bad)}",
                "put it back in place from its source: "
                f"netroot export SOURCE --name {name} --repair",
                Exit.CHECKS,
            )
        return view


@dataclass(frozen=True)
class PrunedOnServers:
    """Each server's prune (or plan): what went, what stayed and why, and who failed."""

    name: str
    found: PerServer[Pruned]
    dry_run: bool

    def view(self) -> View:
        plans = {s: p.plan for s, p in self.found.answers.items()}
        view = prune_tables(self.name, plans, self.dry_run)
        view.json = {
            "name": self.name,
            "dry_run": self.dry_run,
            "removed": {w: p.remove for w, p in plans.items()},
            "kept": {w: p.kept for w, p in plans.items()},
            "failed": {w: e.message for w, e in self.found.failed.items()},
        }
        view.error = failure(self.found.failed, f"pruning {self.name}")
        return view


@dataclass(frozen=True)
class RepairedOnServers:
    """The repair of every server serving the image, one after the other."""

    name: str
    results: dict[str, RepairResult]

    def view(self) -> View:
        return repair_view(self.name, self.results)
