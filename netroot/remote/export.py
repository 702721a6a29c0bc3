"""The server's half of a remote export: lock, verify, commit, switch, prune (runs ON the server).

The control host (netroot.export.serverroot) runs it over SSH with become, sent as source in the
command line with the few modules it imports (netroot.bundle.helper_command: the standard
library and netroot.errors/fsutil and export.manifest/members/scan/fstree/versiontree only, as
the server has python3, not netroot; nothing is installed there), as if it were

    python3 -m netroot.remote.export ROOT NAME VID

(One-shot instead: `--verify ROOT NAME VID|""` re-hashes a committed version, read-only, for
`netroot verify`; `--list ROOT NAME` lists the versions for `netroot versions`; `--prune ROOT
NAME KEEP DRY_RUN PROTECTED_JSON` prunes under the export name's lock for `netroot prune`, or
with DRY_RUN "1" says what it would remove and why it keeps the rest, taking no lock;
`--repair ROOT NAME VID` puts a damaged version back in place: netroot.remote.export_repair.)

One session per export, speaking JSON lines on stdin/stdout. The helper takes the export name's
lock (flock on ROOT/NAME/.lock, the same lock a local export takes, so it dies with this
process: a control host killed mid-export releases it when SSH closes our stdin), removes what
killed runs left (a staging dir of another version, a version dir without its manifest) and
answers `hello`: the current version, whether VID is already committed, and the versions rsync
may hard-link unchanged files from. staging/VID itself is kept: an interrupted transfer of the
same version resumes into it. The control host then rsyncs the tree into staging/VID and sends
one request line (then `manifest_bytes` bytes of manifest JSON when it commits). On `commit` the
staged tree is re-hashed from disk and compared with the manifest (every path's kind, mode,
owner, size, mtime, content hash, device numbers, xattrs, hard-link group, and the tree hash);
only a tree that matches is renamed into versions/ with its manifest. EOF before a request
leaves nothing visible.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netroot.errors import NetrootError
from netroot.export import versiontree
from netroot.export.fstree import ignore, remove_tree
from netroot.export.manifest import (
    VERSION_RE,
    Entry,
    Layout,
    Manifest,
    check_name,
    current_id,
    diff_entries,
    lock_holder,
    switch_current,
    tree_hash,
    try_lock,
)
from netroot.export.scan import scan
from netroot.remote.export_repair import repair_session

LINK_BASES = 3  # versions rsync may link unchanged files from (current first, then newest)


def _reply(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def _committed(layout: Layout) -> list[str]:
    """Committed version ids, oldest first: versiontree's one order (as on the control host)."""
    return [m.version for m in versiontree.committed(layout)]


def _inode_digests(layout: Layout, bases: list[str]) -> dict[tuple[int, int], str]:
    """(device, inode) -> content digest of every regular file of committed versions `bases`."""
    found: dict[tuple[int, int], str] = {}
    for vid in bases:
        root = layout.version_dir(vid)
        entries = Manifest.from_json(layout.manifest_path(vid).read_text()).entries
        for path, entry in entries.items():
            if entry.kind == "f":
                try:
                    st = os.lstat(f"{root}/{path}")
                except OSError:
                    continue
                found[(st.st_dev, st.st_ino)] = entry.data
    return found


def _linked(staged: Path, inodes: dict[tuple[int, int], str]) -> dict[str, Entry]:
    """Staged files that are hard links to a committed version's file, with its digest."""
    known: dict[str, Entry] = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(f"{staged}/{rel}" if rel else str(staged)) as it:
            for de in it:
                path = f"{rel}/{de.name}" if rel else de.name
                if de.is_dir(follow_symlinks=False):
                    stack.append(path)
                elif de.is_file(follow_symlinks=False):
                    st = de.stat(follow_symlinks=False)
                    digest = inodes.get((st.st_dev, st.st_ino))
                    if digest is not None:
                        known[path] = Entry("f", 0, 0, 0, 0, 0, digest)
    return known


def verify_staged(staged: Path, manifest: Manifest, layout: Layout, bases: list[str]) -> list[str]:
    """Differences between the staged tree and its manifest, every path's metadata from disk.

    Content is re-hashed, except a file rsync hard-linked to a committed version's (the same
    inode, so the same bytes: versions are never modified in place, and that version was
    verified when it was committed): its digest is that version's manifest's. A re-export
    then re-hashes what changed, not the whole image.
    """
    linked = _linked(staged, _inode_digests(layout, bases)) if bases else {}
    actual = scan(str(staged), digests=linked)
    differences = diff_entries(manifest.entries, actual)
    if not differences and tree_hash(actual) != manifest.tree_hash:
        differences = [f"tree hash {tree_hash(actual)} != manifest {manifest.tree_hash}"]
    return differences


def _finish(layout: Layout, vid: str, request: dict[str, Any]) -> dict[str, Any]:
    switched = bool(request.get("switch")) and switch_current(layout, vid)
    keep = request.get("keep")
    protected = {str(v) for v in request.get("protected") or ()}
    pruned = _prune(layout, int(keep), {v: ["protected"] for v in protected}) if keep else []
    return {"ok": True, "switched": switched, "pruned": pruned, "current": current_id(layout)}


def _summary(layout: Layout, vid: str) -> str:
    """VID's manifest without its per-path tables (what a no-op reports)."""
    return versiontree.summary(layout, vid).to_json()


def _prune(layout: Layout, keep: int, protected: dict[str, list[str]]) -> list[str]:
    return versiontree.apply_prune(layout, versiontree.plan_prune(layout, keep, protected))


def session(root: Path, name: str, vid: str) -> int:
    if not root.is_absolute() or ".." in root.parts or not VERSION_RE.match(vid):
        _reply({"ok": False, "error": f"bad root {str(root)!r} or version {vid!r}"})
        return 2
    layout = Layout(root, check_name(name))
    versiontree.make_dirs(layout)
    if try_lock(layout) is None:  # held until this process ends
        _reply({"ok": False, "busy": True, "error": f"another export or prune of {name!r} runs: "
                + lock_holder(layout)})  # fmt: skip
        return 1
    versiontree.clean_stale(layout, keep_staging=vid)
    exists = layout.manifest_path(vid).exists() and layout.version_dir(vid).is_dir()
    current = current_id(layout)
    committed = _committed(layout)
    bases = ([current] if current in committed else []) + [
        v for v in reversed(committed) if v != current
    ]
    staged = layout.staging / vid
    if not exists:
        staged.mkdir(mode=0o755, exist_ok=True)
    _reply(
        {
            "ok": True,
            "exists": exists,
            "current": current,
            "bases": [str(layout.version_dir(v)) for v in bases[:LINK_BASES]],
            "staging": str(staged),
            "manifest": _summary(layout, vid) if exists else "",
        }
    )
    manifest: Manifest | None = None
    text = ""
    while True:
        # Bytes only: a text-mode readline would buffer the manifest bytes after the line.
        line = sys.stdin.buffer.readline()
        if not line.strip():
            return 0  # the control host went away: staging/VID stays for the next run
        request = json.loads(line)
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
        op = request.get("op")
        if "manifest_bytes" in request:
            text = sys.stdin.buffer.read(int(request["manifest_bytes"])).decode()
            manifest = Manifest.from_json(text)
            if manifest.version != vid or manifest.name != name:
                _reply({"ok": False, "error": f"manifest is {manifest.name}@{manifest.version}"})
                return 1
        if op == "collisions" and manifest is not None:
            _reply({"ok": True, "paths": collisions(layout, manifest, bases[:LINK_BASES])})
            continue
        if op == "abort":
            # The transfer failed for good (a full disk): give the space back.
            remove_tree(str(staged), ignore)
            _reply({"ok": True, "aborted": True})
            return 0
        if op == "commit" and not exists:
            if manifest is None:
                raise ValueError("commit without a manifest")
            differences = verify_staged(staged, manifest, layout, bases[:LINK_BASES])
            if differences:
                remove_tree(str(staged), ignore)  # a resumed run must not trust it
                _reply({"ok": False, "differences": differences[:20], "count": len(differences)})
                return 1
            versiontree.commit(layout, staged, vid, text)
        _reply(_finish(layout, vid, request))
        return 0


def collisions(layout: Layout, manifest: Manifest, bases: list[str]) -> list[str]:
    """Files rsync's quick check would take from a --link-dest version although they differ.

    rsync links (or copies) a link-dest file whose size and mtime match, without reading it:
    a changed file of the same size and time (a version string, a config) would arrive with
    the old bytes. These must be sent with --checksum; with the other names of their
    hard-link group, so the group stays whole. rsync compares the times to the nanosecond
    (--modify-window=-1); here whole seconds: a superset, whatever the server's rsync does.
    """
    found: set[str] = set()
    for vid in bases:
        old = Manifest.from_json(layout.manifest_path(vid).read_text()).entries
        for path, entry in manifest.entries.items():
            prev = old.get(path)
            if (
                entry.kind == "f"
                and prev is not None
                and prev.kind == "f"
                and prev.size == entry.size
                and prev.mtime_ns // 10**9 == entry.mtime_ns // 10**9
                and prev.data != entry.data
            ):
                found.add(path)
    groups = {manifest.entries[p].group for p in found} - {""}
    found |= {p for p, e in manifest.entries.items() if e.group and e.group in groups}
    return sorted(found)


def verify(root: Path, name: str, vid: str) -> int:
    """Re-hash a committed version against its manifest (read-only: no lock, nothing written)."""
    layout = Layout(root, check_name(name))
    vid = vid or current_id(layout) or ""
    if not VERSION_RE.match(vid) or not layout.manifest_path(vid).is_file():
        _reply({"ok": False, "error": f"no version {vid or 'current'!r} of {name!r} under {root}"})
        return 2
    manifest = Manifest.from_json(layout.manifest_path(vid).read_text())
    differences = verify_staged(layout.version_dir(vid), manifest, layout, [])
    _reply(
        {
            "ok": True,
            "version": vid,
            "files": manifest.files,
            "tree_hash": manifest.tree_hash,
            "differences": differences,
            # what the control host names in the way back (`netroot export SOURCE --repair`)
            "source": manifest.source,
            "repo_tags": manifest.repo_tags,
            "image_id": manifest.image_id,
        }
    )
    return 0


def list_versions(root: Path, name: str) -> int:
    """`current` and every committed version's manifest summary, oldest first (read-only)."""
    layout = Layout(root, check_name(name))
    if not layout.versions.is_dir():
        _reply({"ok": False, "error": f"no export named {name!r} under {root}"})
        return 2
    found = [_summary(layout, vid) for vid in _committed(layout)]
    _reply({"ok": True, "current": current_id(layout), "versions": found})
    return 0


def prune_only(root: Path, name: str, keep: str, dry_run: str, protected: str) -> int:
    """`netroot prune` on the server: under the export name's lock (never waiting for it);
    DRY_RUN "1" plans only (no lock, nothing written). PROTECTED: JSON {version: [why]}."""
    layout = Layout(root, check_name(name))
    if not layout.versions.is_dir() or not keep.isdigit() or int(keep) < 1:
        _reply({"ok": False, "error": f"no export named {name!r} under {root} (keep {keep!r})"})
        return 2
    reasons = json.loads(protected)
    if not isinstance(reasons, dict):
        raise ValueError("PROTECTED is a JSON object")
    kept = {str(v): [str(w) for w in why] for v, why in reasons.items()}
    if dry_run != "1" and try_lock(layout) is None:  # held until this process ends
        _reply({"ok": False, "busy": True, "error": f"another export or prune of {name!r} runs: "
                + lock_holder(layout)})  # fmt: skip
        return 1
    plan = versiontree.plan_prune(layout, int(keep), kept)
    if dry_run != "1":
        versiontree.apply_prune(layout, plan)
    _reply(
        {"ok": True, "pruned": plan.remove, "plan": plan.to_json(), "current": current_id(layout)}
    )
    return 0


MODES: dict[str, tuple[Callable[..., int], int]] = {
    "--verify": (verify, 3),
    "--list": (list_versions, 2),
    "--prune": (prune_only, 5),
    "--repair": (repair_session, 3),
}


def main(argv: list[str]) -> int:
    mode, count = MODES.get(argv[0] if argv else "", (session, 3))
    args = argv[1:] if mode is not session else argv
    if len(args) != count:
        sys.stderr.write(
            "usage: export [--verify] ROOT NAME VID | --list ROOT NAME | "
            "--prune ROOT NAME KEEP DRY_RUN PROTECTED_JSON | --repair ROOT NAME VID\n"
        )
        return 2
    try:
        return mode(Path(args[0]), *args[1:])
    except NetrootError as exc:
        _reply({"ok": False, "error": exc.message})
        return 2
    except OSError as exc:
        _reply({"ok": False, "error": f"{exc.strerror}: {exc.filename}", "errno": exc.errno})
        return 1
    except (ValueError, KeyError, TypeError) as exc:  # a request this helper cannot read
        _reply({"ok": False, "error": f"bad request ({exc})"})
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
