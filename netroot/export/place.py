"""Where a version lives, as one object: this host's export root, one server over SSH, or
several servers. Each answers the same verbs (export, repair, versions, verify, prune), so no
command asks which it has: netroot.fleet.where.open_place chooses, once, from the inventory.

A verb's answer carries its own view (`Shown.view`): the JSON and tables the CLI prints, the
same shape for this host and one server, a per-server one for several.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from netroot.errors import Exit, NetrootError, UsageError
from netroot.export.manifest import Manifest
from netroot.export.request import ExportOptions, Source
from netroot.export.verbs import ExportResult, RepairResult
from netroot.export.versiontree import PrunePlan

Protection = Mapping[str, Sequence[str]]  # version -> why a board needs it


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    rows: list[list[object]]


@dataclass(frozen=True)
class Said:
    text: str
    status: bool  # a status line (stderr), else data (stdout)


@dataclass
class View:
    """An answer as it is shown: JSON on stdout (--json), else `shown` in order (tables and
    plain lines on stdout, status lines on stderr); `notes` go to stderr either way, first;
    `error`, when set, is raised once the rest is shown."""

    json: object
    notes: list[str] = field(default_factory=list)
    shown: list[Table | Said] = field(default_factory=list)
    error: NetrootError | None = None

    def line(self, text: str) -> None:
        self.shown.append(Said(text, False))

    def info(self, text: str) -> None:
        self.shown.append(Said(text, True))


class Shown(Protocol):
    def view(self) -> View: ...


class Place(Protocol):
    """Where an export name's versions live: the verbs every command needs."""

    @property
    def where(self) -> str:
        """For messages: a path, server:path, or the servers' names."""
        ...

    def export(self, source: Source, name: str, options: ExportOptions) -> Shown: ...

    def repair(self, source: Source, name: str, options: ExportOptions) -> Shown: ...

    def versions(self, name: str) -> Shown: ...

    def verify(self, name: str, vid: str | None, root: Path | None = None) -> Shown:
        """root: the --root the command was given (named again in the way back)."""
        ...

    def prune(self, name: str, keep: int, protection: Protection, *, dry_run: bool) -> Shown: ...

    def interrupted(self, name: str) -> Callable[[], str] | None:
        """What a Ctrl-C during an export of NAME leaves, read back (None: the default)."""
        ...


class Root(Place, Protocol):
    """One export root (this host's, or one server's): its answers are one root's, and an
    export to several roots (netroot.export.fanout) works on each in two steps."""

    @property
    def label(self) -> str:
        """Its name in a prune's or a repair's lines: a path, or the server's name."""
        ...

    def export(self, source: Source, name: str, options: ExportOptions) -> Exported: ...

    def repair(self, source: Source, name: str, options: ExportOptions) -> Repaired: ...

    def versions(self, name: str) -> Listing: ...

    def verify(self, name: str, vid: str | None, root: Path | None = None) -> Checked: ...

    def prune(self, name: str, keep: int, protection: Protection, *, dry_run: bool) -> Pruned: ...

    def export_here(self, source: Source, name: str, options: ExportOptions) -> Exported | Receiver:
        """An export to several roots, first step (in turn, on this thread): a root on this
        host exports now; one reached over SSH hands back its second step."""
        ...


class Receiver(Protocol):
    """A root's second step of an export to several roots, on a thread of its own."""

    def receive(self, name: str, vid: str, options: ExportOptions, fan: Fan) -> Exported:
        """Say whether the version is needed (`fan.needs`), then receive the tree built once
        on this host (`fan.built`)."""
        ...

    @property
    def mirror(self) -> Path:
        """Where this host builds the tree it sends."""
        ...


@dataclass
class Fan:
    """The second step's meeting point: each root says whether it needs the version; the
    tree is built once (when any does) and handed to every root that waits for it."""

    needs: Callable[[bool], None]
    built: Callable[[], tuple[Path, Manifest] | None]  # waits; (mirror root, manifest)
    started: float
    progress: Callable[[int, int], None] | None


@dataclass(frozen=True)
class Exported:
    """One export root's export: the result, where the version is, what crossed the wire."""

    result: ExportResult
    name: str
    path: str  # the version's directory (on the server, for a remote root)
    server: str = ""  # a root reached over SSH: the server's name
    bytes_sent: int | None = None  # what rsync sent it (None: nothing crossed a wire)

    def view(self) -> View:
        r, m, name = self.result, self.result.manifest, self.name
        sent = {"server": self.server, "bytes_sent": self.bytes_sent}
        sent = {} if self.bytes_sent is None else sent
        fields = {
            "noop": r.noop,
            "current": m.version,
            "switched": r.switched,
            "pruned": r.pruned,
            "seconds": round(r.seconds, 3),
            "path": self.path,
        }
        rows: list[list[object]] = [
            ["version", m.version],
            ["state", "already exported (no-op)" if r.noop else "new version"],
            ["current", f"-> versions/{m.version}" + ("" if r.switched else " (unchanged)")],
            ["source", f"{m.source['kind']} {m.source['ref']}"],
            ["image id", m.image_id],
            ["files", m.files],
            ["bytes", m.bytes],
            ["reused", f"{m.reused_files} files from {m.reused_from or '-'}"],
            ["tree hash", m.tree_hash],
            ["leftovers", "; ".join(f"{c['path']} {c['action']}" for c in m.leftovers) or "-"],
            ["path", ":".join(filter(None, [self.server, self.path]))],
            ["seconds", fields["seconds"]],
        ]
        if self.bytes_sent is not None:
            rows.append(["sent", f"{self.bytes_sent} bytes over SSH (rsync)"])
        rows += [["pruned", ", ".join(r.pruned)]] if r.pruned else []
        return View(
            m.summary() | fields | sent,
            notes=[f"{name} {m.version} is already exported (no-op)"] if r.noop else [],
            shown=[Table(f"export {name}", ["field", "value"], rows)],
        )


def no_export(name: str, where: str) -> UsageError:
    return UsageError(
        f"no export named {name!r} under {where}",
        "export one with `netroot export SOURCE --name NAME`, or pass --root",
    )


def version_rows(found: Sequence[Manifest]) -> list[list[object]]:
    """exported (UTC), source, entries and MiB of each version (the tables of `versions`)."""
    return [
        [
            m.exported_at[:16].replace("T", " "),
            ",".join(m.repo_tags) or m.source.get("ref", ""),
            m.files,
            f"{m.bytes / 2**20:.1f}",
        ]
        for m in found
    ]


@dataclass(frozen=True)
class Listing:
    """An export root's versions of NAME, oldest first, and its `current`."""

    name: str
    where: str
    current: str | None
    found: list[Manifest]
    exists: bool = True  # NAME has a versions/ dir there

    def view(self) -> View:
        if not self.exists:
            raise no_export(self.name, self.where)
        summaries = [m.summary() for m in self.found]
        rows = [
            ["*" if m.version == self.current else "", m.version, *row]
            for m, row in zip(self.found, version_rows(self.found), strict=True)
        ]
        return View(
            {"name": self.name, "current": self.current, "versions": summaries},
            shown=[
                Table(
                    f"{self.name} under {self.where} (* = current)",
                    ["", "version", "exported (UTC)", "source", "entries", "MiB"],
                    rows,
                )
            ],
        )


@dataclass(frozen=True)
class Checked:
    """A version re-hashed against its manifest where it lives."""

    name: str
    version: str
    files: int
    tree_hash: str
    differences: list[str]
    source: dict[str, str]  # what the way back names: the version's source,
    repo_tags: list[str]  # its tags
    image_id: str  # and image id
    root: Path | None = None  # the command's --root

    def view(self) -> View:
        name, version, differences = self.name, self.version, self.differences
        error = None
        if differences:
            command = repair_command(
                name, version, self.source, self.repo_tags, self.image_id, self.root
            )
            error = NetrootError(
                f"{name}@{version}: {len(differences)} paths differ from the manifest",
                f"put it back in place from its source (boards keep their mounts): {command}",
                Exit.CHECKS,
            )
        view = View(
            {
                "name": name,
                "version": version,
                "ok": not differences,
                "tree_hash": self.tree_hash,
                "differences": differences,
            },
            error=error,
        )
        for line in differences:
            view.line(line)
        if not differences:
            view.info(f"{name}@{version}: ok ({self.files} entries)")
        return view


def repair_command(
    name: str,
    version: str,
    source: dict[str, str],
    repo_tags: list[str],
    image_id: str,
    root: Path | None,
) -> str:
    """The command that puts NAME@VERSION back from its source (what `verify` says to run)."""
    from netroot.export.sources import SourceInfo
    from netroot.export.verbs import planned_version

    kind, ref = source.get("kind", "image"), source.get("ref", "")
    shown = repo_tags[0] if kind == "image" and repo_tags else ref or "SOURCE"
    words = ["netroot", "export", shown, "--name", name, "--repair"]
    info = SourceInfo(kind, ref, image_id)
    if planned_version(info, keep_host_keys=True) == version:
        words.append("--keep-host-keys")
    if root is not None:
        words += ["--root", str(root)]
    return shlex.join(words)


def prune_tables(name: str, plans: Mapping[str, PrunePlan], dry_run: bool) -> View:
    """Each export root's prune: every version, removed (or would be) or kept and why."""
    verb = "would remove" if dry_run else "removed"
    view = View(None)
    for where, plan in plans.items():
        rows: list[list[object]] = [
            [vid, verb if vid in plan.remove else "kept", "; ".join(plan.kept.get(vid, []))]
            for vid in plan.order
        ]
        view.shown.append(Table(f"prune {name} on {where}", ["version", "action", "why"], rows))
        view.info(f"{where}: {verb} {len(plan.remove)} of {len(plan.order)} versions")
    return view


@dataclass(frozen=True)
class Pruned:
    """One export root's prune (or its plan, with dry_run)."""

    name: str
    where: str
    plan: PrunePlan
    dry_run: bool
    exists: bool = True  # NAME has a versions/ dir there

    def view(self) -> View:
        if not self.exists:
            raise no_export(self.name, self.where)
        view = prune_tables(self.name, {self.where: self.plan}, self.dry_run)
        view.json = {
            "name": self.name,
            "dry_run": self.dry_run,
            "removed": self.plan.remove,
            "kept": self.plan.kept,
        }
        return view


def repair_view(name: str, results: Mapping[str, RepairResult]) -> View:
    """What each place's repair put back; exit 3 when paths still differ after it."""
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
    # One place: its answer; several: each one's, by name.
    view = View(next(iter(shown.values())) if len(shown) == 1 else shown)
    for where, r in results.items():
        for line in r.done:
            view.line(f"{where}: {line}")
        state = f"repaired {len(r.done)} paths" if r.done else "not damaged: nothing to do"
        view.info(f"{where}: {name}@{r.manifest.version}: {state}")
    left = {w: r.remaining for w, r in results.items() if r.remaining}
    if left:
        where, lines = next(iter(left.items()))
        view.error = NetrootError(
            f"{where}: {name}: {len(lines)} paths still differ after the repair: "
            + "; ".join(lines[:5]),
            "the export root's disk may be failing; export the image to a new version",
            Exit.CHECKS,
        )
    return view


@dataclass(frozen=True)
class Repaired:
    """One export root's repair."""

    name: str
    where: str
    result: RepairResult

    def view(self) -> View:
        return repair_view(self.name, {self.where: self.result})
