"""Reading archives into a Writer: a plain root-filesystem tar, or a `docker save` archive.

A docker image in the engine arrives as a stream (the docker adapter) and goes through
`apply_stream`; files go through `open_archive`, which tells the two kinds of tar apart.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from netroot.errors import UsageError
from netroot.export.members import Kind, from_tarinfo, whiteout_target
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


def apply_stream(stream: IO[bytes], writer: Writer, ref: str) -> None:
    """Apply a flattened filesystem tar read from a stream (no whiteouts in it)."""
    try:
        with tarfile.open(fileobj=stream, mode="r|*", bufsize=BUFSIZE) as tf:
            _apply(tf, writer, layered=False)
    except tarfile.ReadError as exc:
        raise UsageError(f"{ref}: not a tar archive ({exc})", "pass an image or a .tar") from None


def _apply(tf: tarfile.TarFile, writer: Writer, layered: bool) -> None:
    for ti in tf:
        m = from_tarinfo(ti)
        if layered and whiteout_target(m.path) is not None:
            continue  # applied before the layer (whiteouts hide only lower layers)
        writer.apply(m, tf.extractfile(ti) if m.kind is Kind.FILE else None)


def _sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return "sha256:" + hashlib.file_digest(f, "sha256").hexdigest()


def _open_tar(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, mode="r:*")
    except (tarfile.ReadError, tarfile.CompressionError) as exc:
        raise UsageError(
            f"{path}: not a tar archive ({exc})",
            "pass a root-filesystem tar, a `docker save` archive, or an image name",
        ) from None


def inspect_archive(path: Path) -> SourceInfo:
    """Tell a `docker save` archive from a plain rootfs tar and identify it."""
    if not path.is_file():
        raise UsageError(f"{path}: not a file", "pass an existing archive or an image name")
    with _open_tar(path) as tf:
        names = tf.getnames()
        if "manifest.json" in names:
            return _inspect_save(path, tf)
    return SourceInfo("tar", str(path), _sha256_file(path), size=path.stat().st_size)


def _read_member(tf: tarfile.TarFile, name: str) -> bytes:
    f = tf.extractfile(name)
    if f is None:
        raise UsageError(f"docker save archive: {name} is not a file")
    return f.read()


def _inspect_save(path: Path, tf: tarfile.TarFile) -> SourceInfo:
    try:
        manifest: list[dict[str, Any]] = json.loads(_read_member(tf, "manifest.json"))
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


@contextmanager
def _layer(outer: tarfile.TarFile, name: str) -> Iterator[tarfile.TarFile]:
    f = outer.extractfile(name)
    if f is None:
        raise UsageError(f"docker save archive: layer {name} is not a file")
    with tarfile.open(fileobj=f, mode="r:*") as tf:
        yield tf


def apply_archive(info: SourceInfo, writer: Writer) -> None:
    """Write an archive: plain tar as is; docker save layer by layer with whiteouts applied."""
    path = Path(info.ref)
    if info.kind == "tar":
        with path.open("rb") as f:
            apply_stream(f, writer, info.ref)
        return
    writer.layered = True
    with _open_tar(path) as outer:
        for name in info.layers:
            with _layer(outer, name) as tf:
                # First the whiteouts (they hide lower layers only), then the layer's files.
                for ti in tf.getmembers():
                    target = whiteout_target(from_tarinfo(ti).path)
                    if target is not None:
                        writer.whiteout(*target)
                _apply(tf, writer, layered=True)
