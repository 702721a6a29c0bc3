"""Repair a committed version in place, from a good copy of the paths that differ.

A version is never changed, except to put back what its manifest records. Boards that have it
mounted hold NFS file handles into it (an inode each): a file replaced by a new inode (a
rename, or a whole new tree swapped in) leaves them on the damaged one, or gives them ESTALE
once it is freed (SIGBUS in a running program). So a damaged regular file is rewritten in its
own inode (same handle; the clients' caches notice the new ctime), its metadata set back, and
every directory time restored; only a path that is missing or of the wrong kind gets a new
inode (no client can hold a good handle to it). Boards need no remount.

The good copy is trusted path by path only where its entry is the manifest's (content hash,
mode, owner, size, time, xattrs): a source that no longer gives this version's tree is
refused, nothing changed. Runs on this host (netroot.export.verbs) and on the NFS server
(netroot.remote.export), so standard library only (plus the export's manifest, scan, fstree).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from netroot.export.fstree import remove_tree
from netroot.export.manifest import Entry

CHUNK = 1 << 20
MAKE = {"c": stat.S_IFCHR, "b": stat.S_IFBLK, "p": stat.S_IFIFO}


class Unrepairable(Exception):
    """The good copy does not hold what the manifest records at a damaged path."""


def damaged(expected: Mapping[str, Entry], actual: Mapping[str, Entry]) -> list[str]:
    """Paths whose entry on disk is not the manifest's (missing and extra ones too), sorted."""
    return sorted(p for p in set(expected) | set(actual) if expected.get(p) != actual.get(p))


def _unlinked(entry: Entry) -> Entry:
    """An entry without its hard-link group (a partial good copy has no groups)."""
    return replace(entry, group="")


def check_good(
    paths: list[str], expected: Mapping[str, Entry], good: Mapping[str, Entry]
) -> list[str]:
    """Damaged paths the good copy cannot put back (it holds something else there)."""
    bad = []
    for path in paths:
        want = expected.get(path)
        if want is None:
            continue  # extra on disk: removed, nothing to take
        have = good.get(path)
        if have is None or _unlinked(have) != _unlinked(want):
            bad.append(path)
    return bad


def _meta(target: int | str, e: Entry) -> None:
    """Owner, mode, xattrs, time, in that order (chown clears setuid and capabilities).
    `target`: an open fd or a path (never followed when the entry is a symlink)."""
    if e.kind == "l":
        os.chown(target, e.uid, e.gid, follow_symlinks=False)
        os.utime(target, ns=(e.mtime_ns, e.mtime_ns), follow_symlinks=False)
        return
    os.chown(target, e.uid, e.gid)
    os.chmod(target, e.mode)
    want = {k: bytes.fromhex(v) for k, v in e.xattrs}
    for key in os.listxattr(target):
        if key not in want:
            os.removexattr(target, key)
    for key, value in want.items():
        os.setxattr(target, key, value)
    os.utime(target, ns=(e.mtime_ns, e.mtime_ns))


def _rewrite(full: str, source: str, e: Entry) -> None:
    """The file's bytes and metadata put back in its own inode (its NFS handle stays good)."""
    fd = os.open(full, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with open(source, "rb") as good:
            offset = 0
            while chunk := good.read(CHUNK):
                view = memoryview(chunk)
                while view:
                    n = os.pwrite(fd, view, offset)
                    offset += n
                    view = view[n:]
        os.ftruncate(fd, e.size)
        os.fsync(fd)
        _meta(fd, e)
    finally:
        os.close(fd)


def _create(full: str, source: str, e: Entry, leader: str | None) -> None:
    """A new inode for a path that is missing or of the wrong kind (renamed into place)."""
    tmp = f"{full}.netroot-repair"
    remove_tree(tmp)
    if e.kind == "f" and leader is not None:
        os.link(leader, tmp, follow_symlinks=False)  # its group's inode, put back already
        os.rename(tmp, full)
        return
    if e.kind == "d":
        remove_tree(full)
        os.mkdir(full, 0o700)
        _meta(full, e)
        return
    if e.kind == "f":
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        _rewrite(tmp, source, e)
    elif e.kind == "l":
        os.symlink(e.data, tmp)
        _meta(tmp, e)
    else:
        major, minor = (int(x) for x in e.data.split(":")) if e.data else (0, 0)
        os.mknod(tmp, MAKE[e.kind] | 0o600, os.makedev(major, minor))
        _meta(tmp, e)
    if os.path.isdir(full) and not os.path.islink(full):
        remove_tree(full)
    os.rename(tmp, full)


def _same_object(have: Entry | None, e: Entry) -> bool:
    """The path on disk is the right object, only its metadata differ (a directory, a
    device with the right numbers, a fifo): set them back, same inode."""
    if have is None or have.kind != e.kind or e.kind in ("f", "l"):
        return False
    return e.kind == "d" or have.data == e.data


def repair(
    version: Path,
    good_root: Path,
    expected: Mapping[str, Entry],
    actual: Mapping[str, Entry],
) -> list[str]:
    """Put back what differs between `expected` (the manifest) and `actual` (the version as
    scanned) from `good_root`, whose entries at those paths the caller checked (check_good);
    say what was done, one line a path."""
    root = str(version)
    paths = damaged(expected, actual)
    done: list[str] = []
    # Extras first, deepest first (a directory that should not be there goes with its tree).
    for path in sorted((p for p in paths if p not in expected), key=len, reverse=True):
        remove_tree(f"{root}/{path}")
        done.append(f"removed /{path}")
    placed: set[str] = set()
    for path in sorted((p for p in paths if p in expected), key=lambda p: p.count("/")):
        e, have = expected[path], actual.get(path)
        full, source = f"{root}/{path}" if path else root, f"{good_root}/{path}"
        leader = None
        if e.group and e.group != path and (e.group in placed or e.group not in paths):
            leader = f"{root}/{e.group}"
        if have is not None and have.kind == e.kind == "f" and have.group == e.group:
            _rewrite(full, source, e)
            done.append(f"rewrote /{path} in place")
        elif _same_object(have, e):
            _meta(full, e)
            done.append(f"put back /{path}'s metadata")
        else:
            _create(full, source, e, leader)
            done.append(f"recreated /{path}")
        placed.add(path)
    # Every directory's time last (what was created or removed above moved some of them).
    for path in sorted(expected, key=lambda p: p.count("/"), reverse=True):
        e = expected[path]
        full = f"{root}/{path}" if path else root
        if e.kind == "d" and os.lstat(full).st_mtime_ns != e.mtime_ns:
            os.utime(full, ns=(e.mtime_ns, e.mtime_ns), follow_symlinks=False)
    return done
