"""This host's export root as a place (netroot.export.place): the NFS server itself, or a host
that mounts its export root. Every verb is netroot.export.verbs's, on that path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from netroot.export import verbs
from netroot.export.manifest import Layout, check_name
from netroot.export.place import (
    Checked,
    Exported,
    Listing,
    Protection,
    Pruned,
    Repaired,
)
from netroot.export.request import ExportOptions, Source


@dataclass(frozen=True)
class HostRoot:
    path: Path

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def label(self) -> str:
        return str(self.path)

    def export(self, source: Source, name: str, options: ExportOptions) -> Exported:
        result = verbs.export(source, self.path, name, options)
        path = self.path / name / "versions" / result.manifest.version
        return Exported(result, name, str(path))

    def export_here(self, source: Source, name: str, options: ExportOptions) -> Exported:
        return self.export(source, name, options)

    def repair(self, source: Source, name: str, options: ExportOptions) -> Repaired:
        return Repaired(name, self.label, verbs.repair(source, self.path, name, options))

    def versions(self, name: str) -> Listing:
        layout = Layout(self.path, check_name(name))
        found, current = verbs.list_versions(layout), verbs.current_id(layout)
        return Listing(name, self.where, current, found, layout.versions.is_dir())

    def verify(self, name: str, vid: str | None, root: Path | None = None) -> Checked:
        m, differences = verbs.verify(self.path, name, vid)
        return Checked(
            name, m.version, m.files, m.tree_hash, differences, m.source, m.repo_tags,
            m.image_id, root,
        )  # fmt: skip

    def prune(self, name: str, keep: int, protection: Protection, *, dry_run: bool) -> Pruned:
        exists = Layout(self.path, check_name(name)).versions.is_dir()
        plan = verbs.prune_plan(self.path, name, keep, protection, dry_run=dry_run)
        return Pruned(name, self.label, plan, dry_run, exists)

    def interrupted(self, name: str) -> Callable[[], str]:
        return committed_since(self.path, name)


def committed_since(root: Path, name: str) -> Callable[[], str]:
    """What an interrupted export committed: a version is committed once its manifest is
    renamed into versions/ (export.verbs), so the versions now and before say it."""
    from netroot.export.manifest import current_id

    layout = Layout(root, check_name(name))

    def committed() -> set[str]:
        return (
            {p.stem for p in layout.versions.glob("*.json")} if layout.versions.is_dir() else set()
        )

    before, current = committed(), current_id(layout)

    def said() -> str:
        new = sorted(committed() - before)
        if not new:
            return f"interrupted: nothing committed ({name}'s current is unchanged)"
        moved = current_id(layout) != current
        return f"interrupted: {name} {', '.join(new)} committed" + (
            f"; current -> {current_id(layout)}" if moved else "; current unchanged"
        )

    return said
