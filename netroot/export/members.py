"""Tar members as plain data, and the safety filter every member passes before it is written.

Pure: no I/O. The filter keeps a model of the tree built so far (which paths are directories,
symlinks or other files, and each directory's children), so it can refuse a member that would
write through a symlink or hard-link to something outside the tree before anything touches the
disk, and drop a whole subtree (a whiteout) in time proportional to that subtree.
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


# The one map between tar types, stat file types and kinds (members, overlay and scan use it).
KIND_OF_TAR = {
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
KIND_OF_S_IFMT = {ifmt: kind for kind, ifmt in S_IFMT_OF.items()}


def kind_of_mode(st_mode: int) -> Kind | None:
    """The kind of an lstat() mode; None for what a version never holds (sockets)."""
    return KIND_OF_S_IFMT.get(stat.S_IFMT(st_mode))


XATTR_PREFIX = "SCHILY.xattr."
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"

# Linux limits (linux/limits.h, linux/kdev_t.h): checked here so the error names the member
# instead of surfacing as an errno from deep inside the write.
NAME_MAX = 255
PATH_MAX = 4096  # incl. the NUL: a path or symlink target is at most 4095 bytes
XATTR_NAME_MAX = 255
XATTR_SIZE_MAX = 65536
MAJOR_MAX = (1 << 12) - 1
MINOR_MAX = (1 << 20) - 1
ID_MAX = (1 << 32) - 2  # (uid_t)-1 means "leave unchanged" to chown
# What ext4 (and xfs without bigtime) store: 1901-12-13 .. 2446-05-10. Outside it the kernel
# clamps silently, and the written tree would not be the archive.
MTIME_MIN = -(1 << 31)
MTIME_MAX = (1 << 34) - (1 << 31) - 1
XATTR_NAMESPACES = ("user.", "trusted.", "security.")


def shown(name: str, limit: int = 200) -> str:
    """A member name for an error line: as the archive names it, cut when absurdly long."""
    return name if len(name) <= limit else name[:limit] + f"... ({len(name)} chars)"


class UnsafeMember(UsageError):
    """A member that would escape the version directory or is not representable."""

    def __init__(self, member: str, why: str) -> None:
        super().__init__(
            f"refused archive member {shown(member)!r}: {why}",
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


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def normalize_path(raw: str) -> str:
    """`./a//b/` -> `a/b`; refuse absolute names, `..`, NUL and over-long names."""
    if "\0" in raw:
        raise UnsafeMember(raw, "NUL byte in name")
    if raw.startswith("/"):
        raise UnsafeMember(raw, "absolute name")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeMember(raw, "'..' in name")
    for part in parts:
        if _bytes(part) > NAME_MAX:
            raise UnsafeMember(raw, f"a name component is longer than {NAME_MAX} bytes")
    path = "/".join(parts)
    if _bytes(path) >= PATH_MAX:
        raise UnsafeMember(raw, f"name longer than {PATH_MAX - 1} bytes")
    return path


def _mtime_ns(ti: tarfile.TarInfo) -> int:
    # pax mtime may carry nanoseconds ("1700000000.123456789"); float would lose them.
    text = ti.pax_headers.get("mtime")
    try:
        value = Decimal(text) if text else Decimal(ti.mtime)
        if not value.is_finite():
            raise InvalidOperation
    except (InvalidOperation, ValueError, TypeError):
        raw = shown(str(text or ti.mtime), 40)
        raise UnsafeMember(ti.name, f"mtime {raw!r} is not a number") from None
    if not MTIME_MIN <= value <= MTIME_MAX:
        raise UnsafeMember(
            ti.name, f"mtime {shown(str(value), 40)} is outside 1901..2446 (what filesystems store)"
        )
    return int(value * 1_000_000_000)


def _check_header(ti: tarfile.TarInfo, kind: Kind) -> None:
    for what, value in (("uid", ti.uid), ("gid", ti.gid)):
        if not isinstance(value, int) or not 0 <= value <= ID_MAX:
            raise UnsafeMember(ti.name, f"{what} {shown(str(value), 40)} is out of range")
    if not isinstance(ti.size, int) or ti.size < 0:
        raise UnsafeMember(ti.name, f"negative size {ti.size}")
    if kind in (Kind.CHAR, Kind.BLOCK) and not (
        0 <= ti.devmajor <= MAJOR_MAX and 0 <= ti.devminor <= MINOR_MAX
    ):
        raise UnsafeMember(
            ti.name, f"device number {ti.devmajor}:{ti.devminor} is out of range for Linux"
        )


def check_xattrs(name: str, kind: Kind, xattrs: dict[str, bytes]) -> None:
    """Refuse, by name, an xattr Linux would refuse or netroot cannot write exactly."""
    for key, value in xattrs.items():
        if key.startswith("system.posix_acl_"):
            raise UnsafeMember(name, f"POSIX ACL xattr {key!r} is not supported")
        if not key.startswith(XATTR_NAMESPACES) or key in XATTR_NAMESPACES:
            raise UnsafeMember(name, f"xattr {shown(key, 60)!r}: unsupported namespace")
        if _bytes(key) > XATTR_NAME_MAX:
            raise UnsafeMember(name, f"xattr name longer than {XATTR_NAME_MAX} bytes")
        if len(value) > XATTR_SIZE_MAX:
            raise UnsafeMember(name, f"xattr {key!r} is larger than {XATTR_SIZE_MAX} bytes")
        if key.startswith("user.") and kind not in (Kind.FILE, Kind.DIR):
            # Linux allows user.* only on regular files and directories.
            raise UnsafeMember(name, f"xattr {key!r} on a {kind.name.lower()}")


def from_tarinfo(ti: tarfile.TarInfo) -> Member:
    """Normalise a TarInfo (names, header values and xattrs checked; binary xattr values
    recovered from pax text)."""
    kind = KIND_OF_TAR.get(ti.type)
    path = normalize_path(ti.name)
    if kind is None:
        raise UnsafeMember(ti.name, f"unsupported member type {ti.type!r}")
    if path == "" and kind is not Kind.DIR:
        raise UnsafeMember(ti.name, "the root must be a directory")
    _check_header(ti, kind)
    acl = [k for k in ti.pax_headers if k.startswith("SCHILY.acl.")]
    if acl:
        raise UnsafeMember(ti.name, f"POSIX ACLs ({acl[0]}) are not supported")
    xattrs = {
        key[len(XATTR_PREFIX) :]: value.encode("utf-8", "surrogateescape")
        for key, value in ti.pax_headers.items()
        if key.startswith(XATTR_PREFIX)
    }
    if kind is not Kind.HARDLINK:  # a hard link's inode is its target's: xattrs ignored
        check_xattrs(ti.name, kind, xattrs)
    linkname = ti.linkname
    if kind is Kind.HARDLINK:
        linkname = normalize_path(linkname)
        if not linkname:
            raise UnsafeMember(ti.name, "hard link to the root")
    elif kind is Kind.SYMLINK:
        if not linkname or "\0" in linkname:
            raise UnsafeMember(ti.name, "empty or NUL symlink target")
        if _bytes(linkname) >= PATH_MAX:
            raise UnsafeMember(ti.name, f"symlink target longer than {PATH_MAX - 1} bytes")
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
        xattrs=xattrs if kind is not Kind.HARDLINK else {},
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


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


class TreeGuard:
    """What the tree being written holds, by path, so members can be checked before writing.

    Invariant: every recorded path's ancestors are recorded directories. So a parent check
    looks at the direct parent only (O(depth) to hash it), and `children` indexes each
    directory's entries so a whiteout costs the size of what it removes, not of the tree.
    """

    def __init__(self, max_path: int = PATH_MAX - 1) -> None:
        self.kinds: dict[str, Kind] = {"": Kind.DIR}
        self._children: dict[str, set[str]] = {"": set()}
        self.max_path = max_path  # bytes of an in-tree path the export root leaves room for

    def _check_parent(self, path: str, member: str) -> None:
        # The nearest recorded ancestor must be a directory: never a symlink (that would
        # write through it, possibly outside), never a file. Missing parents become dirs.
        parent = _parent(path)
        while parent not in self.kinds:
            parent = _parent(parent)
        kind = self.kinds[parent]
        if kind is Kind.SYMLINK:
            raise UnsafeMember(member, f"parent {parent!r} is a symlink")
        if kind is not Kind.DIR:
            raise UnsafeMember(member, f"parent {parent!r} is not a directory")

    def missing_parents(self, path: str) -> list[str]:
        """Ancestors of `path` not yet in the tree, outermost first (tar may omit them)."""
        missing: list[str] = []
        parent = _parent(path)
        while path and parent not in self.kinds:
            missing.append(parent)
            parent = _parent(parent)
        missing.reverse()
        return missing

    def _record(self, path: str, kind: Kind) -> None:
        if path not in self.kinds:
            self._children[_parent(path)].add(path)
        self.kinds[path] = kind
        if kind is Kind.DIR:
            self._children.setdefault(path, set())

    def admit(self, m: Member, layered: bool = False) -> list[str]:
        """Check `m` against the tree and record it; raise UnsafeMember naming it if refused.

        Returns the paths `m` displaces when it replaces a directory (allowed only between
        docker layers, where a file in an upper layer hides a whole lower directory): the
        caller removes that subtree. Empty otherwise.
        """
        if len(m.path.encode("utf-8", "surrogateescape")) > self.max_path:
            raise UnsafeMember(
                m.path, f"name too long for the filesystem here (over {self.max_path} bytes)"
            )
        self._check_parent(m.path, m.path)
        existing = self.kinds.get(m.path)
        kind = m.kind
        if m.kind is Kind.HARDLINK:
            target = self.kinds.get(m.linkname)
            if target is None:
                self._check_parent(m.linkname, m.path)
                raise UnsafeMember(m.path, f"hard link target {m.linkname!r} is not in the archive")
            if target is Kind.DIR:
                raise UnsafeMember(m.path, f"hard link to directory {m.linkname!r}")
            if m.linkname == m.path:
                raise UnsafeMember(m.path, "hard link to itself")
            if existing is Kind.DIR:
                raise UnsafeMember(m.path, "hard link would replace a directory")
            kind = target
        gone: list[str] = []
        if existing is Kind.DIR and kind is not Kind.DIR:
            if not layered:
                # A plain tar replacing a directory by a file is malformed; tar refuses too.
                raise UnsafeMember(m.path, "a non-directory would replace a directory")
            gone = self.remove(m.path)
        for parent in self.missing_parents(m.path):
            self._record(parent, Kind.DIR)
        self._record(m.path, kind)
        return gone

    def remove(self, path: str) -> list[str]:
        """Forget `path` and everything below it (a whiteout); return what was there."""
        if path not in self.kinds or not path:
            return []
        self._children[_parent(path)].discard(path)
        gone = [path, *self._subtree(path)]
        for p in gone:
            del self.kinds[p]
            self._children.pop(p, None)
        return gone

    def _subtree(self, path: str) -> list[str]:
        out: list[str] = []
        stack = list(self._children.get(path, ()))
        while stack:
            p = stack.pop()
            out.append(p)
            stack.extend(self._children.get(p, ()))
        return out

    def children(self, path: str) -> list[str]:
        """Everything strictly below directory `path` (an opaque marker hides them)."""
        return self._subtree(path)

    def clear_dir(self, path: str) -> list[str]:
        """Forget everything below directory `path` (an opaque marker); return it."""
        gone = self._subtree(path)
        for p in gone:
            del self.kinds[p]
            self._children.pop(p, None)
        if path in self._children:
            self._children[path] = set()
        return gone
