"""Reading archives into a Writer: a plain root-filesystem tar, or a `docker save` archive.

A docker image in the engine arrives as a stream (the docker adapter) and goes through
`apply_stream`; files go through `open_archive`, which tells the two kinds of tar apart.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from netroot.errors import UsageError
from netroot.export.members import Kind, whiteout_target
from netroot.export.tarstream import read_members
from netroot.export.writer import Writer

BUFSIZE = 1 << 20


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


def apply_stream(stream: IO[bytes], writer: Writer, ref: str, layered: bool = False) -> None:
    """Apply a tar read from a stream; in a docker layer, skip the (pre-applied) whiteouts."""
    for m, data in read_members(stream, ref):
        if layered and whiteout_target(m.path) is not None:
            continue  # applied before the layer (whiteouts hide only lower layers)
        writer.apply(m, data if m.kind is Kind.FILE else None)


def _decompressed(f: IO[bytes]) -> IO[bytes]:
    """Transparent gzip/bzip2/xz for archives given as files (docker's own streams are plain)."""
    head = f.read(6)
    f.seek(0)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    if head.startswith(b"BZh"):
        return bz2.BZ2File(f)
    if head.startswith(b"\xfd7zXZ"):
        return lzma.LZMAFile(f)
    return f


def _sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return "sha256:" + hashlib.file_digest(f, "sha256").hexdigest()


def _open_tar(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, mode="r:*")
    except (tarfile.ReadError, tarfile.CompressionError) as exc:
        # tarfile's "r:*" error lists every method it tried, one per line: keep the plain
        # tar reader's reason (the last line, "- method tar: ReadError('...'))")
        last = str(exc).strip().splitlines()[-1]
        quoted = re.search(r"'([^']*)'\)*$", last)
        why = quoted.group(1) if quoted else last
        raise UsageError(
            f"{path}: not a tar archive ({why})",
            "pass a root-filesystem tar, a `docker save` archive, or an image name",
        ) from None


def inspect_archive(path: Path) -> SourceInfo:
    """Tell a `docker save` archive from a plain rootfs tar and identify it."""
    if not path.is_file():
        raise UsageError(f"{path}: not a file", "pass an existing archive or an image name")
    with _open_tar(path) as tf:
        names = tf.getnames()
        if "manifest.json" in names:
            saved = _inspect_save(path, tf)
            if saved is not None:
                return saved
    return SourceInfo("tar", str(path), _sha256_file(path), size=path.stat().st_size)


def _read_member(tf: tarfile.TarFile, name: str) -> bytes:
    f = tf.extractfile(name)
    if f is None:
        raise UsageError(f"docker save archive: {name} is not a file")
    return f.read()


def _inspect_save(path: Path, tf: tarfile.TarFile) -> SourceInfo | None:
    try:
        manifest: list[dict[str, Any]] = json.loads(_read_member(tf, "manifest.json"))
    except ValueError:
        return None  # a rootfs that happens to hold /manifest.json
    if not isinstance(manifest, list) or not all(
        isinstance(x, dict) and "Layers" in x for x in manifest
    ):
        return None
    try:
        if len(manifest) != 1:
            raise UsageError(
                f"{path}: docker save archive holds {len(manifest)} images",
                "save one image per archive (`docker save IMAGE:TAG -o FILE`)",
            )
        entry = manifest[0]
        config_raw = _read_member(tf, entry["Config"])
        config: dict[str, Any] = json.loads(config_raw)
        layers = [str(x) for x in entry["Layers"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: malformed docker save manifest ({exc})") from None
    size = sum(tf.getmember(n).size for n in layers)
    return SourceInfo(
        kind="docker-save",
        ref=str(path),
        digest="sha256:" + hashlib.sha256(config_raw).hexdigest(),
        repo_tags=list(entry.get("RepoTags") or []),
        created=str(config.get("created", "")),
        architecture="/".join(
            x for x in (config.get("architecture", ""), config.get("variant", "")) if x
        ),
        size=size,
        layers=layers,
    )


def apply_archive(info: SourceInfo, writer: Writer) -> None:
    """Write an archive: plain tar as is; docker save layer by layer with whiteouts applied."""
    path = Path(info.ref)
    if info.kind == "tar":
        with path.open("rb", buffering=BUFSIZE) as f:
            apply_stream(_decompressed(f), writer, info.ref)
        return
    writer.layered = True
    with _open_tar(path) as outer:
        for name in info.layers:
            layer = outer.extractfile(name)
            if layer is None:
                raise UsageError(f"{path}: layer {name} is not a file")
            where = f"{path}:{name}"
            stream = _decompressed(layer)
            # First the whiteouts (they hide lower layers only), then the layer's files.
            outs = [t for m, _ in read_members(stream, where) if (t := whiteout_target(m.path))]
            for target, opaque in outs:
                writer.whiteout(target, opaque)
            layer.seek(0)
            apply_stream(_decompressed(layer), writer, where, layered=True)
