"""Export, list, verify and prune versions in the export tree (crash-safe by renames)."""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

from netroot import __version__
from netroot.errors import Exit, NetrootError, UsageError
from netroot.export import leftovers
from netroot.export.fstree import ignore, remove_tree
from netroot.export.manifest import (
    BUSY_HINT,
    Layout,
    Manifest,
    check_name,
    diff_entries,
    file_stats,
    lock_holder,
    tree_hash,
    try_lock,
    version_id,
)
from netroot.export.manifest import (
    current_id as current_id,  # re-exported: the export's callers read `current` here
)
from netroot.export.manifest import (
    switch_current as switch_current,
)
from netroot.export.scan import scan
from netroot.export.sources import SourceInfo, SourceRead
from netroot.export.writer import Progress, Reuse, Writer, is_enospc
from netroot.fsutil import atomic_write, fsync_dir

Apply = Callable[[Writer], SourceRead]  # writes the source; says how it was read


@dataclass
class ExportResult:
    manifest: Manifest  # a no-op's has no per-path entries loaded (see read_manifest)
    noop: bool
    switched: bool  # current changed
    pruned: list[str]
    seconds: float


# ROOT/NAME is not traversable by anyone but root: an image's setuid binaries and device
# nodes must not be usable by a local account on the export host. The NFS servers run as
# root (and boards mount with no_root_squash), so they still serve it.
BASE_MODE = 0o700


def _syncfs(path: Path) -> None:
    """Flush the filesystem holding `path` (one call instead of an fsync per file)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


def _prepare(layout: Layout) -> None:
    try:
        layout.base.mkdir(mode=BASE_MODE, parents=True, exist_ok=True)
        os.chmod(layout.base, BASE_MODE)  # also an export tree made by an older netroot
        layout.versions.mkdir(exist_ok=True)
        layout.staging.mkdir(exist_ok=True)
        probe = layout.staging / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError(
            f"export root {layout.root} is not writable: {exc.strerror}",
            "pass --root DIR on a writable filesystem (same filesystem the NFS server exports)",
        ) from None


@contextmanager
def locked(layout: Layout) -> Iterator[None]:
    """One writer per export name at a time (the lock dies with the process: kill -9 safe)."""
    fd = try_lock(layout)
    if fd is None:
        raise NetrootError(
            f"another netroot process is exporting or pruning {layout.name!r}: "
            + lock_holder(layout),
            BUSY_HINT,
            Exit.BUSY,
        )
    try:
        yield
    finally:
        os.close(fd)


def clean_stale(layout: Layout) -> list[str]:
    """Remove what a killed run left: staging dirs and version dirs without a manifest."""
    removed: list[str] = []
    for child in layout.staging.iterdir():
        remove_tree(str(child))
        removed.append(str(child))
    for child in layout.versions.iterdir():
        if child.name.endswith(".tmp"):  # a manifest's temporary file (fsutil.atomic_write)
            child.unlink()
            removed.append(str(child))
        elif child.is_dir() and not layout.manifest_path(child.name).exists():
            remove_tree(str(child))
            removed.append(str(child))
    return removed


def read_manifest(layout: Layout, vid: str, entries: bool = True) -> Manifest:
    """A version's manifest (its per-path entries left empty unless `entries`)."""
    path = layout.manifest_path(vid)
    try:
        return Manifest.from_json(path.read_text(), entries)
    except FileNotFoundError:
        raise UsageError(
            f"no version {vid!r} of {layout.name!r} under {layout.root}",
            f"see `netroot versions {layout.name}`",
        ) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise NetrootError(f"{path}: unreadable manifest ({exc})", "", Exit.CHECKS) from None


def list_versions(layout: Layout) -> list[Manifest]:
    """Committed versions (a manifest exists), oldest first; summaries (entries not loaded)."""
    if not layout.versions.is_dir():
        return []
    names = [p.name[: -len(".json")] for p in layout.versions.glob("*.json")]
    found = [read_manifest(layout, vid, entries=False) for vid in names]
    return sorted(found, key=lambda m: (m.exported_at, m.version))


def _commit(layout: Layout, staging: Path, manifest: Manifest) -> None:
    """Rename the verified tree into versions/ with its manifest: both appear, or neither.

    The manifest is written (fsynced) beside the staging dir first, so a disk that fills
    while it is written fails before anything is visible; the two renames allocate nothing,
    and a failed second one undoes the first. Only a kill between them leaves versions/ID
    without ID.json (listed by nothing: the manifest is the commit point), removed as stale.
    """
    final = layout.version_dir(manifest.version)
    staged_manifest = layout.staging / f"{manifest.version}.json"
    atomic_write(staged_manifest, manifest.to_json())
    os.rename(staging, final)
    try:
        os.rename(staged_manifest, layout.manifest_path(manifest.version))
    except OSError:
        os.rename(final, staging)
        raise
    fsync_dir(layout.versions)
    fsync_dir(layout.staging)


class ExportOptions(TypedDict, total=False):
    """An export's options, local (export) or remote (export.remote.export_remote)."""

    keep: int | None  # prune to this many versions after (default: no prune)
    keep_host_keys: bool  # keep the image's SSH host keys (default: removed)
    protected: set[str] | None  # versions a prune never removes
    progress: Progress | None
    switch: bool  # move `current` to the version (default: yes)


def export(
    info: SourceInfo, apply: Apply, root: Path, name: str, **options: Unpack[ExportOptions]
) -> ExportResult:
    """Write the source as a new verified version and switch `current` to it.

    switch=False exports without moving `current` (a rollout moves it only once every board
    it targets ran the version green).
    """
    keep, protected = options.get("keep"), options.get("protected")
    keep_host_keys, progress = options.get("keep_host_keys", False), options.get("progress")
    switch = options.get("switch", True)
    started = dt.datetime.now(dt.UTC)
    layout = Layout(root, check_name(name))
    vid = planned_version(info, keep_host_keys=keep_host_keys)
    _prepare(layout)
    with locked(layout):
        clean_stale(layout)
        if layout.manifest_path(vid).exists():
            manifest = read_manifest(layout, vid, entries=False)  # a no-op needs the summary
            switched = switch and switch_current(layout, vid)
            return ExportResult(manifest, True, switched, _prune_after(layout, keep, protected), 0)
        base = current_id(layout)
        reuse = None
        if base and layout.manifest_path(base).exists():
            prev = read_manifest(layout, base)
            reuse = Reuse(layout.version_dir(base), prev.entries, prev.origins, prev.layers)
        staging = layout.staging / vid
        staging.mkdir()
        try:
            manifest = _build(info, apply, layout, staging, vid, reuse, keep_host_keys, progress)
            manifest.reused_from = base or "" if manifest.reused_files else ""
            _commit(layout, staging, manifest)
        except BaseException as exc:
            remove_tree(str(staging), ignore)
            (layout.staging / f"{vid}.json").unlink(missing_ok=True)
            if is_enospc(exc):
                raise NetrootError(
                    f"no space left on the export root {root} (while writing {name} {vid})",
                    "free space or prune old versions (`netroot prune NAME --keep N`); "
                    "current is unchanged",
                    Exit.ENVIRONMENT,
                ) from None
            if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise UsageError(
                    f"cannot write under {root}: {exc.strerror} ({exc.filename})",
                    "run as root on a writable filesystem; current is unchanged",
                ) from None
            raise
        switched = switch and switch_current(layout, vid)
        pruned = _prune_after(layout, keep, protected)
    seconds = (dt.datetime.now(dt.UTC) - started).total_seconds()
    return ExportResult(manifest, False, switched, pruned, seconds)


def planned_version(info: SourceInfo, *, keep_host_keys: bool = False) -> str:
    """The version id `export` gives this source, computed without writing anything."""
    options = [f"kind={info.kind}"] if info.kind != "image" else []
    if keep_host_keys:
        options.append("keep-host-keys")
    return version_id(info.digest, options)


def _build(
    info: SourceInfo,
    apply: Apply,
    layout: Layout,
    staging: Path,
    vid: str,
    reuse: Reuse | None,
    keep_host_keys: bool,
    progress: Progress | None,
) -> Manifest:
    writer = Writer(staging, reuse=reuse, progress=progress)
    read = apply(writer)
    writer.origins.update(read.origins)
    if len(writer.expected) == 1:  # only the root: a board cannot run nothing
        raise UsageError(
            f"{info.ref}: the image holds no files (an empty tree)",
            "export an image or archive with a root filesystem in it",
        )
    changes = leftovers.handle(writer, keep_host_keys)
    expected = writer.finish()
    _syncfs(staging)
    # Metadata re-read from disk after syncfs; content digests are those hashed while writing
    # (re-reading freshly written data would only hit the page cache). `verify` re-hashes all.
    actual = scan(str(staging), digests=expected, progress=_steady(progress, writer))
    differences = diff_entries(expected, actual)
    if differences:
        raise NetrootError(
            f"written tree differs from the archive at {len(differences)} paths: "
            + "; ".join(differences[:5]),
            "this is a bug in netroot or a filesystem that cannot hold the tree "
            "(xattrs, device nodes, owners); current is unchanged",
        )
    files, size = file_stats(actual)
    return Manifest(
        version=vid,
        name=layout.name,
        source={"kind": info.kind, "ref": info.ref, "via": read.via},
        image_id=info.digest,
        repo_tags=info.repo_tags,
        created=info.created,
        architecture=info.architecture,
        files=files,
        bytes=size,
        tree_hash=tree_hash(actual),
        netroot_version=__version__,
        exported_at=dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"),
        leftovers=changes,
        reused_files=writer.reused,
        layers=list(info.layers) if info.kind == "image" else [],
        origins=dict(writer.origins) if info.kind == "image" else {},
        entries=actual,
    )


def _steady(progress: Progress | None, writer: Writer) -> Progress | None:
    """Progress while the written tree is re-read: the bar stays at what was written."""
    if progress is None:
        return None
    return lambda _bytes, _files: progress(writer.bytes_done, writer.members_done)


def verify(root: Path, name: str, vid: str | None = None) -> tuple[Manifest, list[str]]:
    """Re-hash a version's tree against its manifest: (manifest, differing paths)."""
    layout = Layout(root, check_name(name))
    vid = vid or current_id(layout)
    if vid is None:
        raise UsageError(f"{name!r} has no current version under {root}", "export it first")
    manifest = read_manifest(layout, vid)
    actual = scan(str(layout.version_dir(vid)))
    differences = diff_entries(manifest.entries, actual)
    if not differences and tree_hash(actual) != manifest.tree_hash:
        differences = [f"tree hash {tree_hash(actual)} != manifest {manifest.tree_hash}"]
    return manifest, differences


def prune(root: Path, name: str, keep: int, protected: set[str]) -> list[str]:
    """Remove all but the newest `keep` versions; never `current` nor a protected id."""
    if keep < 1:
        raise UsageError(f"--keep {keep}: must keep at least 1 version")
    layout = Layout(root, check_name(name))
    if not layout.versions.is_dir():
        return []
    with locked(layout):
        return _prune(layout, keep, protected)


def _prune_after(layout: Layout, keep: int | None, protected: set[str] | None) -> list[str]:
    return _prune(layout, keep, protected or set()) if keep else []


def _prune(layout: Layout, keep: int, protected: set[str]) -> list[str]:
    versions = list_versions(layout)
    spared = {m.version for m in versions[-keep:]} | protected
    current = current_id(layout)
    if current:
        spared.add(current)
    removed: list[str] = []
    for m in versions:
        if m.version in spared:
            continue
        # Manifest first: a crash then leaves a stale dir, which the next run removes.
        layout.manifest_path(m.version).unlink()
        fsync_dir(layout.versions)
        remove_tree(str(layout.version_dir(m.version)), ignore)
        removed.append(m.version)
    return removed
