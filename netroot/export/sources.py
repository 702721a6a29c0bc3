"""Reading archives into a Writer: a plain root-filesystem tar, or a `docker save` archive.

A docker image in the engine arrives as a stream (the docker adapter) and goes through
`apply_stream`; files go through `inspect_archive` (which tells the two kinds of tar apart and
checks a `docker save` archive's manifest) and `apply_archive`.

Every compressed stream is read to its end, so gzip's CRC, bzip2's and xz's checks are
verified; a `docker save` layer is hashed while it is read and must match the config's
`rootfs.diff_ids` before any of it is written. The stdlib tarfile is used only for random
access to a `docker save` archive's members, after the lean reader (tarstream) has walked
every header with its bounds: tarfile holds a GNU long name or pax header in memory whole.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import re
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from netroot.errors import UsageError
from netroot.export.members import (
    Kind,
    Member,
    UnsafeMember,
    normalize_path,
    shown,
    whiteout_target,
)
from netroot.export.tarstream import NotATar, read_members
from netroot.export.writer import Writer

BUFSIZE = 1 << 20
JSON_MAX = 16 << 20  # manifest.json / config: far above any real one, bounded in memory
DIFF_ID = re.compile(r"^sha256:[0-9a-f]{64}$")
# The files a `docker save` archive holds (legacy and OCI layouts): the walk that tells it
# from a root filesystem stops at the first file of any other name.
SAVE_FILE = re.compile(r"^(.*\.(json|tar)|json|VERSION|repositories|oci-layout|[0-9a-f]{64})$")
Progress = Callable[[int, int], None]


@dataclass
class SourceInfo:
    """What an archive or image is, before any of it is written."""

    kind: str  # image | tar | docker-save
    ref: str
    digest: str  # image id or the archive's sha256
    repo_tags: list[str] = field(default_factory=list)
    created: str = ""
    architecture: str = ""
    size: int = 0  # bytes expected (for progress), 0 if unknown
    layers: list[str] = field(default_factory=list)  # members of a docker-save archive
    diff_ids: list[str] = field(default_factory=list)  # docker-save: sha256 of each layer


@dataclass(frozen=True)
class SourceRead:
    """What writing a source learned, handed back to the export (recorded in its manifest)."""

    via: str = "archive"  # how the source was read: archive | layer-dirs | docker-export
    origins: dict[str, int] = field(default_factory=dict)  # file -> image layer it came from


class Checked(io.RawIOBase):
    """A stream whose decompression faults are refusals naming the archive; optionally hashed.

    (An OSError with an errno is the disk's, not the archive's, and passes through.)"""

    def __init__(self, inner: IO[bytes], where: str, hasher: Any = None) -> None:
        self._inner = inner
        self._where = where
        self._hasher = hasher
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            n = self._inner.readinto(b)  # type: ignore[attr-defined]
        except (EOFError, zlib.error, lzma.LZMAError) as exc:
            why = f"compressed stream truncated or corrupt ({exc})"
            raise NotATar(f"{self._where}: {why}") from None
        except OSError as exc:
            if exc.errno is not None:
                raise
            raise NotATar(f"{self._where}: compressed stream corrupt ({exc})") from None
        n = n or 0
        if self._hasher is not None and n:
            self._hasher.update(memoryview(b)[:n])
        self.count += n
        return n


def compression(head: bytes) -> str:
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh"):
        return "bzip2"
    if head.startswith(b"\xfd7zXZ"):
        return "xz"
    return ""


def _decompressed(f: IO[bytes], where: str, hasher: Any = None) -> tuple[IO[bytes], bool]:
    """Transparent gzip/bzip2/xz (docker's own streams are plain): (stream, compressed)."""
    head = f.read(6)
    f.seek(0)
    method = compression(head)
    return _opened(f, method, where, hasher), bool(method)


def _opened(f: IO[bytes], method: str, where: str, hasher: Any = None) -> IO[bytes]:
    inner: IO[bytes] = f
    if method == "gzip":
        inner = gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[assignment]
    elif method == "bzip2":
        inner = bz2.BZ2File(f)
    elif method == "xz":
        inner = lzma.LZMAFile(f)  # noqa: SIM115 (closed with f)
    raw = Checked(inner, where, hasher)
    return io.BufferedReader(raw, BUFSIZE)


def drain(stream: IO[bytes]) -> None:
    """Read to the end (a compressed stream's checksum is checked only there)."""
    while stream.read(BUFSIZE):
        pass


def apply_stream(
    stream: IO[bytes],
    writer: Writer,
    ref: str,
    layered: bool = False,
    adjust: Callable[[Member], Member] | None = None,
) -> None:
    """Apply a tar read from a stream; in a docker layer, skip the (pre-applied) whiteouts.
    `adjust`: what the version holds of a member, when not the member as read."""
    for m, data in read_members(stream, ref):
        if layered and whiteout_target(m.path) is not None:
            continue  # applied before the layer (whiteouts hide only lower layers)
        if adjust is not None:
            m = adjust(m)
        writer.apply(m, data if m.kind is Kind.FILE else None, layered=layered)


class _Hashing(io.RawIOBase):
    """The raw archive file, hashed as it is read (its digest is the version's identity)."""

    def __init__(self, f: IO[bytes], progress: Progress | None) -> None:
        self._f = f
        self.sha = hashlib.sha256()
        self.count = 0
        self._progress = progress

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._f.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.sha.update(memoryview(b)[:n])
            self.count += n
            if self._progress is not None and self.count % (16 << 20) < n:
                self._progress(self.count, 0)
        return n or 0


def _looks_saved(path: Path, progress: Progress | None) -> tuple[bool, str]:
    """(is it a `docker save` archive, sha256 of the file), in one bounded pass.

    `docker save` holds nothing deeper than blobs/sha256/HEX, only files named like
    SAVE_FILE, and a top-level manifest.json; a root filesystem soon has a deeper path, an
    etc/ or another file, so the walk stops there (it does not list a whole rootfs).
    """
    with path.open("rb", buffering=0) as f:
        method = compression(f.read(6))
        f.seek(0)
        raw = io.BufferedReader(_Hashing(f, progress), BUFSIZE)
        stream = _opened(raw, method, str(path)) if method else raw
        manifest = False
        saved = True
        for m, _data in read_members(stream, str(path)):
            if not _save_like(m):
                saved = False
                break
            manifest = manifest or (m.path == "manifest.json" and m.kind is Kind.FILE)
        else:
            drain(stream)
        drain(raw)
        return saved and manifest, "sha256:" + raw.raw.sha.hexdigest()


def _save_like(m: Member) -> bool:
    if m.path.count("/") > 2 or m.path == "etc" or m.path.startswith("etc/"):
        return False
    if m.kind is Kind.FILE:
        return bool(SAVE_FILE.match(m.path.rpartition("/")[2]))
    return m.kind in (Kind.DIR, Kind.SYMLINK)  # legacy saves link duplicate layers


def _open_tar(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, mode="r:*")
    except (tarfile.ReadError, tarfile.CompressionError) as exc:
        last = str(exc).strip().splitlines()[-1]
        raise UsageError(
            f"{path}: not a tar archive ({last})",
            "pass a root-filesystem tar, a `docker save` archive, or an image name",
        ) from None


def inspect_archive(path: Path, progress: Progress | None = None) -> SourceInfo:
    """Tell a `docker save` archive from a plain rootfs tar and identify it."""
    if not path.is_file():
        raise UsageError(f"{path}: not a file", "pass an existing archive or an image name")
    try:
        saved, digest = _looks_saved(path, progress)
        if saved:
            with _open_tar(path) as tf:
                return _inspect_save(path, tf)
    except PermissionError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
        # the lean walk passed every header first: tarfile failing after it is rare
        raise BadSave(path, f"tarfile could not read it ({exc})") from None
    return SourceInfo("tar", str(path), digest, size=path.stat().st_size)


class BadSave(UsageError):
    """A `docker save` archive whose manifest.json or config is malformed."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"{path}: malformed docker save archive: {why}",
            "re-create it with `docker save IMAGE:TAG -o FILE`",
        )


def _regular(path: Path, members: dict[str, tarfile.TarInfo], ref: object, what: str) -> str:
    """The archive member `ref` names (as the archive names it), which must be a plain file."""
    if not isinstance(ref, str) or not ref:
        raise BadSave(path, f"{what} must be a member name, not {type(ref).__name__}")
    try:
        name = normalize_path(ref)
    except UnsafeMember:
        raise BadSave(path, f"{what} {shown(ref)!r} points outside the archive") from None
    ti = members.get(name)
    if ti is None:
        raise BadSave(path, f"{what} {shown(ref)!r} is not in the archive")
    if ti.issym() or ti.islnk():
        raise BadSave(path, f"{what} {shown(ref)!r} is a link inside the archive")
    if not ti.isreg():
        raise BadSave(path, f"{what} {shown(ref)!r} is not a regular file")
    return ti.name


def _json(path: Path, tf: tarfile.TarFile, name: str, what: str) -> Any:
    ti = tf.getmember(name)
    if ti.size > JSON_MAX:
        raise BadSave(path, f"{what} {name!r} is {ti.size} bytes")
    f = tf.extractfile(ti)
    assert f is not None  # a regular file (checked)
    raw = f.read()
    try:
        return json.loads(raw), raw
    except ValueError as exc:
        raise BadSave(path, f"{what} {name!r} is not JSON ({exc})") from None


def _inspect_save(path: Path, tf: tarfile.TarFile) -> SourceInfo:
    members = {normalize_path(ti.name): ti for ti in tf.getmembers()}
    manifest, _ = _json(path, tf, _regular(path, members, "manifest.json", "file"), "file")
    if not isinstance(manifest, list) or not all(isinstance(x, dict) for x in manifest):
        raise BadSave(path, "manifest.json must be a list of objects")
    if len(manifest) != 1:
        raise UsageError(
            f"{path}: docker save archive holds {len(manifest)} images",
            "save one image per archive (`docker save IMAGE:TAG -o FILE`)",
        )
    entry = manifest[0]
    config_name = _regular(path, members, entry.get("Config"), "manifest.json Config")
    raw_layers = entry.get("Layers")
    if not isinstance(raw_layers, list):
        raise BadSave(path, "manifest.json Layers must be a list")
    layers = [
        _regular(path, members, ref, f"manifest.json Layers[{i}]")
        for i, ref in enumerate(raw_layers)
    ]
    tags = entry.get("RepoTags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise BadSave(path, "manifest.json RepoTags must be a list of strings")
    config, config_raw = _json(path, tf, config_name, "config")
    if not isinstance(config, dict):
        raise BadSave(path, f"config {config_name!r} must be an object")
    rootfs = config.get("rootfs")
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(
        isinstance(d, str) and DIFF_ID.match(d) for d in diff_ids
    ):
        raise BadSave(path, f"config {config_name!r} has no valid rootfs.diff_ids")
    if len(diff_ids) != len(layers):
        raise BadSave(
            path, f"{len(layers)} layers but {len(diff_ids)} rootfs.diff_ids in {config_name!r}"
        )
    arch = [config.get(k) for k in ("architecture", "variant")]
    return SourceInfo(
        kind="docker-save",
        ref=str(path),
        digest="sha256:" + hashlib.sha256(config_raw).hexdigest(),
        repo_tags=list(tags),
        created=str(config.get("created", "")),
        architecture="/".join(x for x in arch if isinstance(x, str) and x),
        size=sum(tf.getmember(n).size for n in layers),
        layers=layers,
        diff_ids=list(diff_ids),
    )


def apply_archive(info: SourceInfo, writer: Writer) -> SourceRead:
    """Write an archive: plain tar as is; docker save layer by layer with whiteouts applied."""
    path = Path(info.ref)
    if info.kind == "tar":
        with path.open("rb", buffering=0) as f:
            stream, compressed = _decompressed(f, info.ref)
            apply_stream(stream, writer, info.ref)
            if compressed:
                drain(stream)
        return SourceRead()
    with _open_tar(path) as outer:
        for name, diff_id in zip(info.layers, info.diff_ids, strict=True):
            where = f"{path}:{name}"
            # First pass: the whiteouts (they hide lower layers only) and the layer's hash,
            # checked before anything of the layer is written. Then the layer's files.
            sha = hashlib.sha256()
            stream, _ = _decompressed(_member(outer, name), where, sha)
            outs = [t for m, _ in read_members(stream, where) if (t := whiteout_target(m.path))]
            drain(stream)
            if "sha256:" + sha.hexdigest() != diff_id:
                raise UnsafeMember(
                    name,
                    f"layer content does not match the image config's diff id {diff_id} "
                    f"(it is sha256:{sha.hexdigest()})",
                )
            for target, opaque in outs:
                writer.whiteout(target, opaque)
            stream, _ = _decompressed(_member(outer, name), where)
            apply_stream(stream, writer, where, layered=True)
            drain(stream)
    return SourceRead()


def _member(outer: tarfile.TarFile, name: str) -> IO[bytes]:
    f = outer.extractfile(outer.getmember(name))  # a regular file: checked by inspect
    assert f is not None
    return f
