"""Export, list, verify and prune versions in the export tree (crash-safe by renames)."""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import os
from collections.abc import Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from netroot import __version__
from netroot.errors import Exit, NetrootError, UsageError
from netroot.export import leftovers, versiontree
from netroot.export import repair as repairing
from netroot.export.fstree import ignore, remove_tree
from netroot.export.manifest import (
    BUSY_HINT,
    Entry,
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
from netroot.export.request import ExportOptions, Source
from netroot.export.scan import scan
from netroot.export.sources import SourceInfo
from netroot.export.writer import Progress, Reuse, Writer, is_enospc


@dataclass
class ExportResult:
    manifest: Manifest  # a no-op's has no per-path entries loaded (see read_manifest)
    noop: bool
    switched: bool  # current changed
    pruned: list[str]
    seconds: float


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
        versiontree.make_dirs(layout)
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
    """Committed versions, oldest first (versiontree's one order); summaries only."""
    return versiontree.committed(layout)


def export(
    source: Source, root: Path, name: str, options: ExportOptions = ExportOptions()
) -> ExportResult:
    """Write the source as a new verified version and switch `current` to it.

    switch=False exports without moving `current` (a rollout moves it only once every board
    it targets ran the version green).
    """
    info, keep, switch, protected = source.info, options.keep, options.switch, options.protected
    keep_host_keys, progress = options.keep_host_keys, options.progress
    started = dt.datetime.now(dt.UTC)
    layout = Layout(root, check_name(name))
    vid = planned_version(info, keep_host_keys=keep_host_keys)
    _prepare(layout)
    with locked(layout):
        versiontree.clean_stale(layout)
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
            manifest = _build(source, layout, staging, vid, reuse, keep_host_keys, progress)
            manifest.reused_from = base or "" if manifest.reused_files else ""
            versiontree.commit(layout, staging, vid, manifest.to_json())
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


@dataclass
class RepairResult:
    manifest: Manifest  # summary
    done: list[str]  # what was put back, one line a path ([]: nothing was damaged)
    remaining: list[str]  # differences left after (empty unless a bug or the disk again)
    seconds: float


def repair(
    source: Source, root: Path, name: str, options: ExportOptions = ExportOptions()
) -> RepairResult:
    """Put a damaged version back as its manifest records it, in place (netroot.export.repair
    says why in place), from a fresh build of its source; `current` is not moved."""
    started = dt.datetime.now(dt.UTC)
    info, keep_host_keys, progress = source.info, options.keep_host_keys, options.progress
    layout = Layout(root, check_name(name))
    vid = planned_version(info, keep_host_keys=keep_host_keys)
    if not layout.manifest_path(vid).exists():
        raise UsageError(
            f"no version {vid} of {name!r} under {root} to repair ({info.ref} gives that id)",
            "export it without --repair; see `netroot versions NAME` for what is there",
        )
    _prepare(layout)
    with locked(layout):
        versiontree.clean_stale(layout)
        manifest = read_manifest(layout, vid)
        version = layout.version_dir(vid)
        actual = scan(str(version))
        done: list[str] = []
        damaged = set(repairing.damaged(manifest.entries, actual))
        if damaged:
            # The fresh build links the version's intact files (as a re-export links the
            # previous version's) and never a damaged one: the source is read whole, the
            # damaged paths are written anew, and the staging tree is cheap to remove.
            intact = {p: e for p, e in manifest.entries.items() if p not in damaged}
            reuse = Reuse(version, intact, manifest.origins, manifest.layers)
            staging = layout.staging / vid
            staging.mkdir()
            try:
                good = _build(source, layout, staging, vid, reuse, keep_host_keys, progress)
                _check_good(info, manifest, actual, good.entries)
                done = repairing.repair(version, staging, manifest.entries, actual)
            finally:
                remove_tree(str(staging), ignore)
            _syncfs(version)
        remaining = diff_entries(manifest.entries, scan(str(version)))
    seconds = (dt.datetime.now(dt.UTC) - started).total_seconds()
    return RepairResult(manifest, done, remaining, seconds)


def _check_good(
    info: SourceInfo, manifest: Manifest, actual: dict[str, Entry], good: dict[str, Entry]
) -> None:
    """Refuse (nothing changed) when the fresh build differs from the manifest where the
    version is damaged: that source no longer gives this version's tree."""
    bad = repairing.check_good(repairing.damaged(manifest.entries, actual), manifest.entries, good)
    if bad:
        raise NetrootError(
            f"{info.ref} does not give {manifest.name}@{manifest.version}'s tree at "
            f"{len(bad)} of its damaged paths: " + ", ".join("/" + p for p in bad[:5]),
            "nothing was changed; export the image to a new version and roll it out",
            Exit.CHECKS,
        )


def planned_version(info: SourceInfo, *, keep_host_keys: bool = False) -> str:
    """The version id `export` gives this source, computed without writing anything."""
    options = [f"kind={info.kind}"] if info.kind != "image" else []
    if keep_host_keys:
        options.append("keep-host-keys")
    return version_id(info.digest, options)


def _build(
    source: Source,
    layout: Layout,
    staging: Path,
    vid: str,
    reuse: Reuse | None,
    keep_host_keys: bool,
    progress: Progress | None,
) -> Manifest:
    info = source.info
    writer = Writer(staging, reuse=reuse, progress=progress)
    read = source.write(writer)
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


def prune_plan(
    root: Path,
    name: str,
    keep: int,
    protected: Mapping[str, Sequence[str]] | Set[str],
    *,
    dry_run: bool = False,
) -> versiontree.PrunePlan:
    """Prune (or with `dry_run` only plan, writing nothing and taking no lock): what is
    removed and why each other version is kept."""
    if keep < 1:
        raise UsageError(f"--keep {keep}: must keep at least 1 version")
    layout = Layout(root, check_name(name))
    if not layout.versions.is_dir():
        return versiontree.PrunePlan()
    why = reasons(protected)
    if dry_run:
        return versiontree.plan_prune(layout, keep, why)
    with locked(layout):
        plan = versiontree.plan_prune(layout, keep, why)
        versiontree.apply_prune(layout, plan)
        return plan


def reasons(protected: Mapping[str, Sequence[str]] | Set[str] | None) -> dict[str, list[str]]:
    """Protected versions with why (a bare set: "protected")."""
    if isinstance(protected, Mapping):
        return {v: list(why) for v, why in protected.items()}
    return {v: ["protected"] for v in protected or ()}


def _prune_after(layout: Layout, keep: int | None, protected: frozenset[str]) -> list[str]:
    if not keep:
        return []
    plan = versiontree.plan_prune(layout, keep, reasons(protected))
    return versiontree.apply_prune(layout, plan)
