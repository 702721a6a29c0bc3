"""The version tree's rules, written once: base mode, stale cleanup, commit by two renames,
the order of versions ("newest") and prune.

Used on this host (netroot.export.verbs) and on the NFS server (netroot.remote.export,
carried there as source by netroot.bundle), so standard library only, plus netroot.fsutil and
the export's manifest and fstree modules (stdlib-only themselves).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from netroot.export.fstree import ignore, remove_tree
from netroot.export.manifest import TABLES, Layout, Manifest, current_id
from netroot.fsutil import atomic_write, fsync_dir

# ROOT/NAME is not traversable by anyone but root: an image's setuid binaries and device
# nodes must not be usable by a local account on the export host. The NFS servers run as
# root (and boards mount with no_root_squash), so they still serve it.
BASE_MODE = 0o700
HEAD_CHUNK = 1 << 16


def make_dirs(layout: Layout) -> None:
    """ROOT/NAME (mode BASE_MODE, also when an older netroot made it), versions/, .staging/."""
    layout.base.mkdir(mode=BASE_MODE, parents=True, exist_ok=True)
    os.chmod(layout.base, BASE_MODE)
    layout.versions.mkdir(exist_ok=True)
    layout.staging.mkdir(exist_ok=True)


def clean_stale(layout: Layout, keep_staging: str = "") -> list[str]:
    """Remove what a killed run left: staging entries (but `keep_staging`, a transfer to
    resume), a manifest's temporary file, version dirs without a manifest."""
    removed: list[str] = []
    for child in layout.staging.iterdir():
        if child.name != keep_staging:
            remove_tree(str(child), ignore)
            removed.append(str(child))
    for child in layout.versions.iterdir():
        if child.name.endswith(".tmp"):  # a manifest's temporary file (fsutil.atomic_write)
            child.unlink()
            removed.append(str(child))
        elif child.is_dir() and not layout.manifest_path(child.name).exists():
            remove_tree(str(child), ignore)
            removed.append(str(child))
    return removed


def commit(layout: Layout, staging: Path, vid: str, text: str) -> None:
    """Rename the verified tree into versions/ with its manifest: both appear, or neither.

    The manifest is written (fsynced) beside the staging dir first, so a disk that fills
    while it is written fails before anything is visible; the two renames allocate nothing,
    and a failed second one undoes the first. Only a kill between them leaves versions/ID
    without ID.json (listed by nothing: the manifest is the commit point), removed as stale.
    """
    final = layout.version_dir(vid)
    staged_manifest = layout.staging / f"{vid}.json"
    atomic_write(staged_manifest, text)
    os.rename(staging, final)
    try:
        os.rename(staged_manifest, layout.manifest_path(vid))
    except OSError:
        os.rename(final, staging)
        raise
    fsync_dir(layout.versions)
    fsync_dir(layout.staging)


def read_head(path: Path) -> str:
    """A manifest's text up to its per-path tables (enough for Manifest.from_json(entries=
    False)): a summary of a large tree costs a few KiB read, not megabytes."""
    chunks: list[str] = []
    with path.open(encoding="utf-8", errors="surrogateescape") as f:
        while chunk := f.read(HEAD_CHUNK):
            chunks.append(chunk)
            if TABLES in "".join(chunks[-2:]):
                break
    return "".join(chunks)


def summary(layout: Layout, vid: str) -> Manifest:
    """VID's manifest without its per-path tables."""
    return Manifest.from_json(read_head(layout.manifest_path(vid)), entries=False)


def newest_last(found: Sequence[Manifest]) -> list[Manifest]:
    """THE order of versions, on this host and on every server: by the manifest's
    `exported_at` (when the version was built: the same on every server holding it, unlike a
    file's mtime), then the id. Oldest first."""
    return sorted(found, key=lambda m: (m.exported_at, m.version))


def committed(layout: Layout) -> list[Manifest]:
    """Committed versions (a manifest and its tree exist), oldest first; summaries only."""
    if not layout.versions.is_dir():
        return []
    found = []
    for path in layout.versions.glob("*.json"):
        vid = path.name[: -len(".json")]
        if layout.version_dir(vid).is_dir():
            found.append(summary(layout, vid))
    return newest_last(found)


@dataclass
class PrunePlan:
    """What a prune removes and, for each version it keeps, why (in the words shown)."""

    remove: list[str] = field(default_factory=list)
    kept: dict[str, list[str]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # every version, oldest first

    def to_json(self) -> dict[str, object]:
        return {"remove": self.remove, "kept": self.kept, "order": self.order}


def plan_prune(layout: Layout, keep: int, protected: Mapping[str, Sequence[str]]) -> PrunePlan:
    """All but the newest `keep` versions, never `current` nor a protected one (reads only).

    protected: version -> why a board needs it ("pinned by board pi-01", ...)."""
    versions = [m.version for m in committed(layout)]
    current = current_id(layout)
    newest = set(versions[-keep:]) if keep > 0 else set()
    plan = PrunePlan(order=versions)
    for vid in versions:
        why = ["current"] if vid == current else []
        why += list(protected.get(vid, ()))
        if vid in newest:
            why.append(f"among the {keep} newest")
        if why:
            plan.kept[vid] = why
        else:
            plan.remove.append(vid)
    return plan


def apply_prune(layout: Layout, plan: PrunePlan) -> list[str]:
    """Remove the plan's versions; the manifest first, so a crash leaves only a stale dir
    (listed by nothing, removed by the next run)."""
    removed: list[str] = []
    for vid in plan.remove:
        layout.manifest_path(vid).unlink()
        fsync_dir(layout.versions)
        remove_tree(str(layout.version_dir(vid)), ignore)
        removed.append(vid)
    return removed
