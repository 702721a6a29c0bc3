"""The export tree's layout, a version's manifest, and the tree hash (pure)."""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from netroot.errors import UsageError, held_by
from netroot.fsutil import fsync_dir

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
VERSION_RE = re.compile(r"^[0-9a-f]{12,64}$")
FORMAT = 1
TABLES = ',\n "origins": '  # where to_json's per-path tables begin


@dataclass(frozen=True, slots=True)
class Entry:
    """What one path is on disk; equal entries mean identical files (inode metadata incl.)."""

    kind: str  # f d l c b p
    mode: int  # permission bits incl. setuid/setgid/sticky
    uid: int
    gid: int
    size: int
    mtime_ns: int
    data: str = ""  # f: sha256 of content; l: symlink target; c/b: "major:minor"
    xattrs: tuple[tuple[str, str], ...] = ()  # (name, hex value), sorted
    group: str = ""  # hard links: the smallest path naming the same inode; "" when alone

    def line(self, path: str) -> bytes:
        """The canonical line the tree hash is made of."""
        xattrs = ",".join(f"{k}={v}" for k, v in self.xattrs)
        text = (
            f"{path}\0{self.kind}\0{self.mode:o}\0{self.uid}\0{self.gid}\0{self.size}\0"
            f"{self.mtime_ns}\0{self.data}\0{xattrs}\0{self.group}\n"
        )
        return text.encode("utf-8", "surrogateescape")

    @property
    def stat(self) -> tuple[str, int, int, int, int, int]:
        """What stat(2) says of the path: kind, mode, owner, size, mtime."""
        return (self.kind, self.mode, self.uid, self.gid, self.size, self.mtime_ns)

    def to_json(self) -> list[Any]:
        return [*self.stat, self.data, dict(self.xattrs), self.group]

    @classmethod
    def from_json(cls, raw: list[Any]) -> Entry:
        kind, mode, uid, gid, size, mtime_ns, data, xattrs, group = raw
        return cls(kind, mode, uid, gid, size, mtime_ns, data, tuple(sorted(xattrs.items())), group)

    def same_inode_meta(self, other: Entry) -> bool:
        """Everything a hard link shares (so reusing the inode keeps the file exact)."""
        return (self.stat, self.xattrs) == (other.stat, other.xattrs)


def xattr_items(xattrs: Mapping[str, bytes]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v.hex()) for k, v in xattrs.items()))


def tree_hash(entries: Mapping[str, Entry]) -> str:
    """sha256 over the sorted canonical lines: one digest for the whole tree."""
    h = hashlib.sha256()
    for path in sorted(entries):
        h.update(entries[path].line(path))
    return "sha256:" + h.hexdigest()


def diff_entries(expected: Mapping[str, Entry], actual: Mapping[str, Entry]) -> list[str]:
    """Paths that differ, each with why: 'changed PATH', 'missing PATH', 'extra PATH'."""
    out: list[str] = []
    for path in sorted(set(expected) | set(actual)):
        e, a = expected.get(path), actual.get(path)
        shown = "/" + path
        if a is None:
            out.append(f"missing {shown}")
        elif e is None:
            out.append(f"extra {shown}")
        elif e != a:
            fields = [f for f in Entry.__slots__ if getattr(e, f) != getattr(a, f)]
            out.append(f"changed {shown} ({', '.join(fields)})")
    return out


def file_stats(entries: Mapping[str, Entry]) -> tuple[int, int]:
    """(entries, bytes of regular files), hard links counted once."""
    size = sum(e.size for p, e in entries.items() if e.kind == "f" and e.group in ("", p))
    return len(entries), size


@dataclass
class Manifest:
    """ROOT/NAME/versions/ID.json: what the version is, where it came from, what was changed."""

    version: str
    name: str
    source: dict[str, str]  # kind (image|tar|docker-save) and ref
    image_id: str
    repo_tags: list[str]
    created: str
    architecture: str
    files: int
    bytes: int
    tree_hash: str
    netroot_version: str
    exported_at: str
    leftovers: list[dict[str, str]] = field(default_factory=list)
    reused_from: str = ""
    reused_files: int = 0
    format: int = FORMAT
    layers: list[str] = field(default_factory=list)  # image layer diff ids, bottom first
    origins: dict[str, int] = field(default_factory=dict)  # file -> index in layers
    entries: dict[str, Entry] = field(default_factory=dict)

    def _shallow(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self) -> str:
        """Readable top-level fields; the big tables compact (the C encoder, no indent)."""
        data = self._shallow()
        entries = {p: e.to_json() for p, e in sorted(data.pop("entries").items())}
        origins = data.pop("origins")
        head = json.dumps(data, indent=1, sort_keys=True)
        compact = {"separators": (",", ":"), "sort_keys": True}
        return (
            head[:-2]
            + TABLES
            + json.dumps(origins, **compact)  # type: ignore[arg-type]
            + ',\n "entries": '
            + json.dumps(entries, **compact)  # type: ignore[arg-type]
            + "\n}\n"
        )

    def summary(self) -> dict[str, Any]:
        """The manifest without its per-path entries (for tables and --json)."""
        data = self._shallow()
        del data["entries"], data["origins"]
        return copy.deepcopy(data)

    @classmethod
    def from_json(cls, text: str, entries: bool = True) -> Manifest:
        """Parse a manifest; without `entries` the per-path table is left empty (it is most
        of the cost for a large tree, and a summary does not need it)."""
        head = -1 if entries else text.find(TABLES)
        # The big tables come last (to_json): a summary need not parse them at all.
        data = json.loads(text[:head] + "\n}" if head > 0 else text)
        if head > 0:
            data["origins"] = {}
        raw = data.get("entries", {}) if entries else {}
        data["entries"] = {p: Entry.from_json(v) for p, v in raw.items()}
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def version_id(source_digest: str, options: Iterable[str] = ()) -> str:
    """Deterministic id from the source's content (image id / tar digest) and export options."""
    digest = source_digest.split(":", 1)[-1]
    opts = sorted(options)
    if not opts and re.fullmatch(r"[0-9a-f]{16,}", digest):
        return digest[:16]
    joined = "\n".join([digest, *opts])
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise UsageError(
            f"export name {name!r} is not valid",
            "use lowercase letters, digits, '.', '_' or '-' (pass --name NAME)",
        )
    return name


def default_name(ref: str) -> str:
    """The image's repository name (last path part, no tag) or an archive's file stem."""
    base = ref.rstrip("/").rsplit("/", 1)[-1]
    if "@" in base:
        base = base.split("@", 1)[0]
    base = base.split(":", 1)[0]
    for suffix in (".tar", ".tgz", ".gz", ".zst", ".xz"):
        base = base.removesuffix(suffix)
    return base.lower()


@dataclass(frozen=True)
class Layout:
    """Paths of one export name under the export root."""

    root: Path
    name: str

    @property
    def base(self) -> Path:
        return self.root / self.name

    @property
    def versions(self) -> Path:
        return self.base / "versions"

    @property
    def current(self) -> Path:
        return self.base / "current"

    @property
    def staging(self) -> Path:
        # Beside versions/ (same filesystem, so rename(2) moves a finished version in).
        return self.base / ".staging"

    @property
    def lock(self) -> Path:
        return self.base / ".lock"

    def version_dir(self, vid: str) -> Path:
        return self.versions / vid

    def manifest_path(self, vid: str) -> Path:
        return self.versions / f"{vid}.json"


def current_id(layout: Layout) -> str | None:
    """The version `current` points at, or None (no `current` yet)."""
    try:
        return Path(os.readlink(layout.current)).name
    except OSError:
        return None


def switch_current(layout: Layout, vid: str) -> bool:
    """Point `current` at versions/VID with a new symlink renamed over the old one (atomic)."""
    if current_id(layout) == vid:
        return False
    tmp = layout.base / f".current.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    os.symlink(f"versions/{vid}", tmp)
    os.rename(tmp, layout.current)
    fsync_dir(layout.base)
    return True


def try_lock(layout: Layout) -> int | None:
    """The export name's lock (flock on .lock, never waiting), taken by a local export, a
    server-side export and a prune alike: its fd, or None when another process holds it. It
    is held until the fd is closed or the process ends (so kill -9 releases it). The holder
    writes who it is into the file, for the refusal of the next one (`lock_holder`)."""
    fd = os.open(layout.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(_me()).encode(), 0)
    return fd


def _me() -> dict[str, Any]:
    # On the server the helper runs from `python3 -c` over SSH: say whose helper it is.
    client = os.environ.get("SSH_CLIENT", "").split(" ")[0]
    if sys.argv[:1] == ["-c"]:
        command = "netroot's export helper" + (f" for {client}" if client else "")
    else:
        command = "netroot " + " ".join(sys.argv[1:])
    return {"command": command, "pid": os.getpid(), "host": os.uname().nodename,
            "started": time.time()}  # fmt: skip


def lock_holder(layout: Layout) -> str:
    """Who holds the export name's lock, as a refusal names it (read-only)."""
    try:
        me = json.loads(layout.lock.read_text())
        return held_by(me["command"], me["pid"], me["host"], me["started"], time.time())
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is (an older netroot)"


BUSY_HINT = "wait for it to finish, or stop it; its lock goes with its process (nothing to break)"
