"""Write checked tar members into a staging directory with plain os calls.

Every member has passed TreeGuard first, so no parent is a symlink; creation still uses
O_NOFOLLOW/O_EXCL and never opens an existing file for writing (a reused file is a hard link
into the previous version and must never be modified in place).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from netroot.export.fstree import remove_tree
from netroot.export.manifest import Entry, xattr_items
from netroot.export.members import PATH_MAX, S_IFMT_OF, Kind, Member, TreeGuard, UnsafeMember

CHUNK = 1 << 20
BUFFER_LIMIT = 32 << 20  # files up to this size are hashed before writing, to allow reuse
O_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
TICK = 0.25  # seconds between progress reports: never silent for a second
# What a member can make the filesystem refuse (its name, link count, xattrs, device number,
# time): the archive's fault, refused naming it. Anything else is the environment's.
MEMBER_ERRNOS = {
    errno.ENAMETOOLONG: "name too long for the filesystem",
    errno.EMLINK: "more hard links to one file than the filesystem allows",
    errno.EFBIG: "file larger than the filesystem allows",
    errno.EOVERFLOW: "value out of range for the filesystem",
    errno.EINVAL: "refused by the filesystem as invalid",
    errno.E2BIG: "xattrs larger than the filesystem allows",
    errno.ERANGE: "xattrs larger than the filesystem allows",
    errno.EOPNOTSUPP: "not supported by the filesystem",
}
ROOM = 16 << 20  # free bytes below which an ENOSPC from setxattr is a full disk


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...

    def readinto(self, buf: memoryview, /) -> int | None: ...


Progress = Callable[[int, int], None]  # (bytes so far, members so far)


@dataclass
class Reuse:
    """The previous version: unchanged files become hard links to its inodes."""

    root: Path
    entries: Mapping[str, Entry]
    origins: Mapping[str, int] = field(default_factory=dict)  # file -> image layer index
    layers: Sequence[str] = ()  # the previous image's layer diff ids, bottom first

    def candidate(self, path: str, want: Entry) -> Entry | None:
        prev = self.entries.get(path)
        # A file that is a hard link inside the previous version is never shared: its other
        # names would join the new version's inode group.
        if prev is None or prev.group or not prev.same_inode_meta(want):
            return None
        return prev


@dataclass
class Writer:
    """Applies members under `root` and records the entry each one should produce."""

    root: Path
    reuse: Reuse | None = None
    progress: Progress | None = None
    guard: TreeGuard = field(default_factory=TreeGuard)
    expected: dict[str, Entry] = field(default_factory=dict)
    inode: dict[str, int] = field(default_factory=dict)  # hard-linked names -> inode group
    # file -> image layer it came from: what the source said (SourceRead), handed in by the
    # export once the source is written; a path cleared later (leftovers) loses its origin.
    origins: dict[str, int] = field(default_factory=dict)
    dir_times: dict[str, int] = field(default_factory=dict)
    bytes_done: int = 0
    members_done: int = 0
    reused: int = 0

    def __post_init__(self) -> None:
        self._view = memoryview(bytearray(CHUNK))
        self._last_tick = time.monotonic()
        # In-tree paths are bounded so that ROOT/.../staging/ID/PATH stays under PATH_MAX.
        self.guard.max_path = PATH_MAX - 2 - len(os.fsencode(str(self.root)))
        # The root's metadata unless the archive has a root entry ("./").
        os.chown(self.root, 0, 0)
        os.chmod(self.root, 0o755)
        self.expected[""] = Entry("d", 0o755, 0, 0, 0, 0)
        self.dir_times[""] = 0

    def _abs(self, path: str) -> str:
        return f"{self.root}/{path}" if path else str(self.root)

    def _clear(self, path: str, kind: Kind, gone: Sequence[str] = ()) -> None:
        """Make room for `path`: unlink a non-directory; keep a directory if one is coming.

        `gone` is what the guard dropped with it (a replaced directory's subtree)."""
        full = self._abs(path)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return
        was_dir = stat.S_ISDIR(st.st_mode)
        if was_dir and kind is Kind.DIR:
            return
        if was_dir:
            remove_tree(full)
        else:
            os.unlink(full)
        self._forget([path, *gone])

    def _forget(self, paths: Sequence[str]) -> None:
        tables: tuple[dict[str, Any], ...] = (
            self.expected,
            self.inode,
            self.dir_times,
            self.origins,
        )
        for path in paths:
            for table in tables:
                table.pop(path, None)

    def _tick(self) -> None:
        if self.progress is not None:
            now = time.monotonic()
            if now - self._last_tick >= TICK:
                self._last_tick = now
                self.progress(self.bytes_done, self.members_done)

    def _setxattr(self, target: int | str, key: str, value: bytes, m: Member) -> None:
        try:
            if isinstance(target, int):
                os.setxattr(target, key, value)
            else:
                os.setxattr(target, key, value, follow_symlinks=False)
        except OSError as exc:
            # ext4 says ENOSPC when an xattr does not fit its inode/block: a full disk only
            # when the filesystem has no room left.
            if exc.errno == errno.ENOSPC and _free_bytes(self.root) < ROOM:
                raise
            if exc.errno in (errno.ENOSPC, *MEMBER_ERRNOS):
                why = MEMBER_ERRNOS.get(exc.errno or 0, "larger than the filesystem allows")
                raise UnsafeMember(m.path, f"xattr {key!r} ({len(value)} bytes): {why}") from None
            raise

    def _meta(self, full: str, m: Member, fd: int | None = None) -> None:
        # Order matters: chown clears setuid/setgid and security.capability, so it goes first.
        if fd is not None:
            os.fchown(fd, m.uid, m.gid)
            os.fchmod(fd, m.mode)
            for key, value in m.xattrs.items():
                self._setxattr(fd, key, value, m)
            os.utime(fd, ns=(m.mtime_ns, m.mtime_ns))
            return
        os.chown(full, m.uid, m.gid, follow_symlinks=False)
        if m.kind is not Kind.SYMLINK:
            os.chmod(full, m.mode)
        for key, value in m.xattrs.items():
            self._setxattr(full, key, value, m)

    def apply(self, m: Member, data: Readable | None, layered: bool = False) -> None:
        """Write one member (its content read from `data` for regular files); `layered`: it
        comes from a docker layer, over the layers below (what it may replace differs)."""
        parents = self.guard.missing_parents(m.path)
        existed = m.path in self.guard.kinds
        gone = self.guard.admit(m, layered=layered)
        self.members_done += 1
        full = self._abs(m.path)
        with member_faults(m):
            self._parents_from(parents)
            if m.kind is Kind.DIR:
                self._dir(m, full)
            elif m.kind is Kind.HARDLINK:
                self._clear(m.path, m.kind, gone)
                os.link(self._abs(m.linkname), full, follow_symlinks=False)
                group = self.inode.setdefault(m.linkname, len(self.inode) + 1)
                self.inode[m.path] = group
                self.expected[m.path] = self.expected[m.linkname]
            else:
                if gone or existed:
                    self._clear(m.path, m.kind, gone)
                entry = self._entry(m)
                if m.kind is Kind.FILE:
                    entry = self._file(m, full, data, entry)
                elif m.kind is Kind.SYMLINK:
                    os.symlink(m.linkname, full)
                    self._meta(full, m)
                    os.utime(full, ns=(m.mtime_ns, m.mtime_ns), follow_symlinks=False)
                else:
                    dev = os.makedev(m.devmajor, m.devminor) if m.kind is not Kind.FIFO else 0
                    os.mknod(full, S_IFMT_OF[m.kind] | 0o600, dev)
                    self._meta(full, m)
                    os.utime(full, ns=(m.mtime_ns, m.mtime_ns), follow_symlinks=False)
                self.expected[m.path] = entry
        self._tick()

    def link_previous(self, m: Member, prev: Entry) -> None:
        """Make `m` a hard link to the previous version's identical inode (caller checked)."""
        assert self.reuse is not None and m.kind is Kind.FILE
        parents = self.guard.missing_parents(m.path)
        existed = m.path in self.guard.kinds
        gone = self.guard.admit(m)  # from the merged layer dirs: not a layer over others
        with member_faults(m):
            self._parents_from(parents)
            if existed or gone:
                self._clear(m.path, m.kind, gone)
            os.link(f"{self.reuse.root}/{m.path}", self._abs(m.path), follow_symlinks=False)
        self.expected[m.path] = prev  # candidates are never in a hard-link group
        self.reused += 1
        self.members_done += 1
        self.bytes_done += m.size
        self._tick()

    def entry_for(self, m: Member) -> Entry:
        """The entry `m` produces on disk (content digest not included)."""
        return self._entry(m)

    def _parents_from(self, parents: list[str]) -> None:
        for parent in parents:
            full = self._abs(parent)
            os.mkdir(full, 0o755)
            os.chmod(full, 0o755)  # umask must not matter
            self.expected[parent] = Entry("d", 0o755, 0, 0, 0, 0)
            self.dir_times[parent] = 0

    def _entry(self, m: Member) -> Entry:
        data = f"{m.devmajor}:{m.devminor}" if m.kind in (Kind.CHAR, Kind.BLOCK) else ""
        mode = m.mode
        if m.kind is Kind.SYMLINK:
            data = m.linkname
            mode = 0o777  # Linux symlinks have no mode of their own
        return Entry(
            m.kind.value, mode, m.uid, m.gid, m.size, m.mtime_ns, data, xattr_items(m.xattrs)
        )

    def _dir(self, m: Member, full: str) -> None:
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode):
            self._clear(m.path, Kind.FILE)  # the guard replaced the entry already
            st = None
        if st is None:
            os.mkdir(full, 0o700)
        elif m.path in self.expected:
            # A directory seen again (a later layer): its xattrs are replaced, not merged.
            for key in os.listxattr(full, follow_symlinks=False):
                if key not in m.xattrs:
                    os.removexattr(full, key, follow_symlinks=False)
        self._meta(full, m)
        self.expected[m.path] = self._entry(m)
        self.dir_times[m.path] = m.mtime_ns

    def _file(self, m: Member, full: str, data: Readable | None, entry: Entry) -> Entry:
        assert data is not None or m.size == 0
        h = hashlib.sha256()
        prev = self.reuse.candidate(m.path, entry) if self.reuse else None
        if prev is not None and m.size <= BUFFER_LIMIT:
            # Hash first: if the content is the previous version's, link instead of writing.
            content = data.read(m.size) if data is not None else b""
            h.update(content)
            self.bytes_done += len(content)
            digest = h.hexdigest()
            if digest == prev.data:
                os.link(f"{self.reuse.root}/{m.path}", full)  # type: ignore[union-attr]
                self.reused += 1
                return replace(entry, data=digest)
            chunks: list[bytes] = [content]
        else:
            chunks = []
        fd = os.open(full, O_CREATE, 0o600)
        try:
            for chunk in chunks:
                _write_all(fd, chunk)
            if not chunks and data is not None:
                # One reused buffer: a fresh 1 MiB bytes object per read costs page faults.
                view = self._view
                while True:
                    n = data.readinto(view)
                    if not n:
                        break
                    h.update(view[:n])
                    _write_all(fd, view[:n])
                    self.bytes_done += n
                    self._tick()
            self._meta(full, m, fd)
        finally:
            os.close(fd)
        return replace(entry, data=h.hexdigest())

    def whiteout(self, path: str, opaque: bool) -> None:
        """Apply a docker layer's whiteout: remove `path`, or the contents of dir `path`."""
        # Only what the guard knows is touched: a path below a symlink is never in it.
        if opaque:
            if self.guard.kinds.get(path) is not Kind.DIR:
                return
            gone = self.guard.clear_dir(path)
            for name in os.listdir(self._abs(path)):
                remove_tree(self._abs(f"{path}/{name}" if path else name))
            self._forget(gone)
        elif path in self.guard.kinds:
            gone = self.guard.remove(path)
            remove_tree(self._abs(path))
            self._forget(gone)
        self._tick()

    def finish(self) -> dict[str, Entry]:
        """Set directory times deepest first (creating children changed them); return entries."""
        for path in sorted(self.dir_times, key=lambda p: p.count("/"), reverse=True):
            t = self.dir_times[path]
            os.utime(self._abs(path), ns=(t, t), follow_symlinks=False)
        groups: dict[int, list[str]] = {}
        for name, group in self.inode.items():
            groups.setdefault(group, []).append(name)
        for names in groups.values():
            if len(names) > 1:
                leader = min(names)
                for name in names:
                    self.expected[name] = replace(self.expected[name], group=leader)
        return self.expected


def _write_all(fd: int, chunk: bytes | memoryview) -> None:
    view = memoryview(chunk)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@contextmanager
def member_faults(m: Member) -> Iterator[None]:
    """An errno the member causes (see MEMBER_ERRNOS) becomes a refusal naming it."""
    try:
        yield
    except OSError as exc:
        why = MEMBER_ERRNOS.get(exc.errno or 0)
        if why is None:
            raise
        raise UnsafeMember(m.path, f"{why} ({exc.strerror})") from None
    except OverflowError as exc:  # a value beyond the C types (the filter bounds them)
        raise UnsafeMember(m.path, f"value out of range ({exc})") from None


def _free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def is_enospc(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
