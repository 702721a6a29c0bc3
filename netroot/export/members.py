"""Tar members as plain data, and the safety filter every member passes before it is written.

Pure: no I/O. The filter keeps a model of the tree built so far (which paths are directories,
symlinks or other files), so it can refuse a member that would write through a symlink or
hard-link to something outside the tree before anything touches the disk.
"""

from __future__ import annotations

import stat
import tarfile
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from netroot.errors import UsageError


class Kind(StrEnum):
    FILE = "f"
    DIR = "d"
    SYMLINK = "l"
    HARDLINK = "h"  # only in archives; on disk it is a FILE (or whatever it links to)
    CHAR = "c"
    BLOCK = "b"
    FIFO = "p"


_TAR_KINDS = {
    tarfile.REGTYPE: Kind.FILE,
    tarfile.AREGTYPE: Kind.FILE,
    tarfile.CONTTYPE: Kind.FILE,
    tarfile.DIRTYPE: Kind.DIR,
    tarfile.SYMTYPE: Kind.SYMLINK,
    tarfile.LNKTYPE: Kind.HARDLINK,
    tarfile.CHRTYPE: Kind.CHAR,
    tarfile.BLKTYPE: Kind.BLOCK,
    tarfile.FIFOTYPE: Kind.FIFO,
}

S_IFMT_OF = {
    Kind.FILE: stat.S_IFREG,
    Kind.DIR: stat.S_IFDIR,
    Kind.SYMLINK: stat.S_IFLNK,
    Kind.CHAR: stat.S_IFCHR,
    Kind.BLOCK: stat.S_IFBLK,
    Kind.FIFO: stat.S_IFIFO,
}

XATTR_PREFIX = "SCHILY.xattr."
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


class UnsafeMember(UsageError):
    """A member that would escape the version directory or is not representable."""

    def __init__(self, member: str, why: str) -> None:
        super().__init__(
            f"refused archive member {member!r}: {why}",
            "the archive is malformed or hostile; nothing was written outside the staging dir",
        )
        self.member = member


@dataclass(frozen=True)
class Member:
    """One tar member, normalised: `path` is relative ('' is the root), times in ns."""

    path: str
    kind: Kind
    mode: int  # permission bits incl. setuid/setgid/sticky (no file type)
    uid: int
    gid: int
    size: int
    mtime_ns: int
    linkname: str = ""  # symlink target (verbatim) or hard-link target (normalised path)
    devmajor: int = 0
    devminor: int = 0
    xattrs: dict[str, bytes] = field(default_factory=dict)


def normalize_path(raw: str) -> str:
    """`./a//b/` -> `a/b`; refuse absolute names, `..` and NUL (the error names the member)."""
    if "\0" in raw:
        raise UnsafeMember(raw, "NUL byte in name")
    if raw.startswith("/"):
        raise UnsafeMember(raw, "absolute name")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMember(raw, "'..' in name")
    return "/".join(parts)


def _mtime_ns(ti: tarfile.TarInfo) -> int:
    # pax mtime may carry nanoseconds ("1700000000.123456789"); float would lose them.
    text = ti.pax_headers.get("mtime")
    if text:
        try:
            return int(Decimal(text) * 1_000_000_000)
        except InvalidOperation:
            pass
    return int(ti.mtime) * 1_000_000_000


def from_tarinfo(ti: tarfile.TarInfo) -> Member:
    """Normalise a TarInfo (names checked; binary xattr values recovered from pax text)."""
    kind = _TAR_KINDS.get(ti.type)
    path = normalize_path(ti.name)
    if kind is None:
        raise UnsafeMember(ti.name, f"unsupported member type {ti.type!r}")
    if path == "" and kind is not Kind.DIR:
        raise UnsafeMember(ti.name, "the root must be a directory")
    xattrs = {
        key[len(XATTR_PREFIX) :]: value.encode("utf-8", "surrogateescape")
        for key, value in ti.pax_headers.items()
        if key.startswith(XATTR_PREFIX)
    }
    linkname = ti.linkname
    if kind is Kind.HARDLINK:
        linkname = normalize_path(linkname)
        if not linkname:
            raise UnsafeMember(ti.name, "hard link to the root")
    elif kind is Kind.SYMLINK and (not linkname or "\0" in linkname):
        raise UnsafeMember(ti.name, "empty or NUL symlink target")
    return Member(
        path=path,
        kind=kind,
        mode=ti.mode & 0o7777,
        uid=ti.uid,
        gid=ti.gid,
        size=ti.size if kind is Kind.FILE else 0,
        mtime_ns=_mtime_ns(ti),
        linkname=linkname,
        devmajor=ti.devmajor if kind in (Kind.CHAR, Kind.BLOCK) else 0,
        devminor=ti.devminor if kind in (Kind.CHAR, Kind.BLOCK) else 0,
        xattrs=xattrs,
    )


def whiteout_target(path: str) -> tuple[str, bool] | None:
    """For a docker layer: (`dir`, True) for an opaque marker, (`path`, False) for a whiteout."""
    head, _, base = path.rpartition("/")
    if base == OPAQUE:
        return head, True
    if base.startswith(WHITEOUT):
        target = base[len(WHITEOUT) :]
        if target in ("", ".", ".."):
            raise UnsafeMember(path, "malformed whiteout")
        return (f"{head}/{target}" if head else target), False
    return None


class TreeGuard:
    """What the tree being written holds, by path, so members can be checked before writing."""

    def __init__(self) -> None:
        self.kinds: dict[str, Kind] = {"": Kind.DIR}

    def _check_parents(self, path: str, member: str) -> None:
        # Every ancestor must be a directory we created: never a symlink (that would write
        # through it, possibly outside), never a file. Missing parents are created as dirs.
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            kind = self.kinds.get(parent)
            if kind is Kind.SYMLINK:
                raise UnsafeMember(member, f"parent {parent!r} is a symlink")
            if kind is not None and kind is not Kind.DIR:
                raise UnsafeMember(member, f"parent {parent!r} is not a directory")

    def missing_parents(self, path: str) -> list[str]:
        """Ancestors of `path` not yet in the tree, outermost first (tar may omit them)."""
        if path.rpartition("/")[0] in self.kinds:
            return []  # the common case: the parent is there, so all ancestors are
        parts = path.split("/")
        prefixes = ("/".join(parts[:i]) for i in range(1, len(parts)))
        return [p for p in prefixes if p not in self.kinds]

    def admit(self, m: Member, layered: bool = False) -> bool:
        """Check `m` against the tree and record it; raise UnsafeMember naming it if refused.

        Returns True when `m` replaces a directory (allowed only between docker layers, where
        a file in an upper layer hides a whole lower directory): the caller removes the subtree.
        """
        self._check_parents(m.path, m.path)
        existing = self.kinds.get(m.path)
        if m.kind is Kind.HARDLINK:
            self._check_parents(m.linkname, m.path)
            target = self.kinds.get(m.linkname)
            if target is None:
                raise UnsafeMember(m.path, f"hard link target {m.linkname!r} is not in the archive")
            if target is Kind.DIR:
                raise UnsafeMember(m.path, f"hard link to directory {m.linkname!r}")
            if m.linkname == m.path:
                raise UnsafeMember(m.path, "hard link to itself")
            if existing is Kind.DIR:
                raise UnsafeMember(m.path, "hard link would replace a directory")
            self.kinds[m.path] = target
            return False
        replaces_dir = existing is Kind.DIR and m.kind is not Kind.DIR
        if replaces_dir:
            if not layered:
                # A plain tar replacing a directory by a file is malformed; tar refuses too.
                raise UnsafeMember(m.path, "a non-directory would replace a directory")
            self.remove(m.path)
        for parent in self.missing_parents(m.path):
            self.kinds[parent] = Kind.DIR
        self.kinds[m.path] = m.kind
        return replaces_dir

    def remove(self, path: str) -> list[str]:
        """Forget `path` and everything below it (a whiteout); return what was there."""
        prefix = path + "/"
        gone = [p for p in self.kinds if p == path or p.startswith(prefix)]
        for p in gone:
            del self.kinds[p]
        return gone

    def children(self, path: str) -> list[str]:
        """Everything strictly below directory `path` (an opaque marker hides them)."""
        prefix = path + "/" if path else ""
        return [p for p in self.kinds if p != path and p.startswith(prefix)]
