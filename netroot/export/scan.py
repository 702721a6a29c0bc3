"""Walk a tree on disk into entries (what `verify` and the post-write check compare)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping

from netroot.export.manifest import Entry
from netroot.export.members import kind_of_mode


def _xattrs(full: str) -> tuple[tuple[str, str], ...]:
    try:
        names = os.listxattr(full, follow_symlinks=False)
    except OSError:
        return ()
    if not names:
        return ()
    return tuple(sorted((n, os.getxattr(full, n, follow_symlinks=False).hex()) for n in names))


def _sha256(full: str) -> str:
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def scan(
    root: str,
    progress: Callable[[int, int], None] | None = None,
    digests: Mapping[str, Entry] | None = None,
) -> dict[str, Entry]:
    """Entries for every path under `root` ('' is the root), content hashed, links grouped.

    With `digests` (the entries recorded while writing), a regular file's content hash is
    taken from there instead of re-reading it: the metadata is still checked from disk.
    """
    entries: dict[str, Entry] = {}
    inodes: dict[tuple[int, int], list[str]] = {}
    done_bytes = 0
    stack: list[tuple[str, str]] = [("", root)]
    while stack:
        rel, full = stack.pop()
        st = os.lstat(full)
        known_kind = kind_of_mode(st.st_mode)
        kind = known_kind.value if known_kind is not None else "?"
        data = ""
        size = 0
        if kind == "f":
            size = st.st_size
            known = digests.get(rel) if digests is not None else None
            data = known.data if known is not None and known.kind == "f" else _sha256(full)
            done_bytes += size
        elif kind == "l":
            data = os.readlink(full)
        elif kind in ("c", "b"):
            data = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        elif kind == "d":
            with os.scandir(full) as it:
                for de in it:
                    stack.append((f"{rel}/{de.name}" if rel else de.name, de.path))
        if kind != "d" and st.st_nlink > 1:
            inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
        entries[rel] = Entry(
            kind,
            stat.S_IMODE(st.st_mode),
            st.st_uid,
            st.st_gid,
            size,
            st.st_mtime_ns,
            data,
            _xattrs(full),
        )
        if progress is not None and len(entries) % 512 == 0:
            progress(done_bytes, len(entries))
    for names in inodes.values():
        if len(names) > 1:  # other names of the inode may live in other versions: not a group
            leader = min(names)
            for name in names:
                e = entries[name]
                entries[name] = Entry(
                    e.kind, e.mode, e.uid, e.gid, e.size, e.mtime_ns, e.data, e.xattrs, leader
                )
    return entries
