"""Build synthetic (and hostile) tar archives for the export tests."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

UID = os.getuid()
GID = os.getgid()


@dataclass
class Spec:
    """One member: kind is f d l h c b p; `target` is the symlink/hard-link target."""

    name: str
    kind: str = "f"
    data: bytes = b""
    target: str = ""
    mode: int = 0o644
    mtime: int = 1_600_000_000
    xattrs: dict[str, bytes] = field(default_factory=dict)
    uid: int = UID
    gid: int = GID


TYPES = {
    "f": tarfile.REGTYPE,
    "d": tarfile.DIRTYPE,
    "l": tarfile.SYMTYPE,
    "h": tarfile.LNKTYPE,
    "c": tarfile.CHRTYPE,
    "b": tarfile.BLKTYPE,
    "p": tarfile.FIFOTYPE,
}


def tar_bytes(specs: list[Spec], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for s in specs:
            ti = tarfile.TarInfo(s.name)
            ti.type = TYPES[s.kind]
            ti.mode = s.mode
            ti.mtime = s.mtime
            ti.uid, ti.gid = s.uid, s.gid
            ti.linkname = s.target
            if s.kind in "cb":
                ti.devmajor, ti.devminor = 1, 7
            if s.xattrs:
                ti.pax_headers = {
                    f"SCHILY.xattr.{k}": v.decode("utf-8", "surrogateescape")
                    for k, v in s.xattrs.items()
                }
            if s.kind == "f":
                ti.size = len(s.data)
                tar.addfile(ti, io.BytesIO(s.data))
            else:
                tar.addfile(ti)
    return buf.getvalue()


def write_tar(path: Path, specs: list[Spec]) -> Path:
    path.write_bytes(tar_bytes(specs))
    return path


def write_docker_save(
    path: Path,
    layers: list[list[Spec]],
    tags: list[str],
    diff_ids: list[str] | None = None,
    manifest: object = None,
) -> Path:
    """A legacy `docker save` archive: manifest.json, a config, one layer.tar per layer.

    The config's rootfs.diff_ids are the layers' sha256 unless `diff_ids` says otherwise;
    `manifest` replaces manifest.json's content (to build malformed ones)."""
    blobs = [tar_bytes(specs) for specs in layers]
    if diff_ids is None:
        diff_ids = ["sha256:" + hashlib.sha256(b).hexdigest() for b in blobs]
    config = json.dumps(
        {
            "architecture": "amd64",
            "created": "2024-01-01T00:00:00Z",
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }
    ).encode()
    with tarfile.open(path, "w") as tar:
        names = []
        for i, data in enumerate(blobs):
            ti = tarfile.TarInfo(f"layer{i}/layer.tar")
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
            names.append(ti.name)
        if manifest is None:
            manifest = [{"Config": "config.json", "RepoTags": tags, "Layers": names}]
        for name, blob in (
            ("config.json", config),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            ti = tarfile.TarInfo(name)
            ti.size = len(blob)
            tar.addfile(ti, io.BytesIO(blob))
    return path
