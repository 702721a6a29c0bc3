"""The same image gives the same tree: what Docker makes in a container takes the image's time.

Docker's init layer (the paths of netroot.export.image.CONTAINER_MADE) is stamped with the
container's creation time; two `docker export`s of one image, a second apart, are fed here as
the engine gives them (the same members, those paths at two times), by the stream and by
overlay2 layer dirs. The real engine: tests/integration/export/test_export_reproducible.py.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from netroot.export import verbs
from netroot.export.image import CONTAINER_MADE, apply_image, image_time_ns
from netroot.export.manifest import Layout
from netroot.export.request import Source
from netroot.export.sources import SourceInfo
from netroot.export.writer import Writer
from tests.unit.export.tarbuild import Spec, tar_bytes

CREATED = "2024-05-06T07:08:09.123456789Z"
IMAGE_TIME = image_time_ns(CREATED)
INIT_DIRS = ("dev", "dev/pts", "dev/shm", "etc", "proc", "sys")
INIT_FILES = (".dockerenv", "dev/console", "etc/hostname", "etc/hosts", "etc/resolv.conf")
IMAGE = [
    Spec("bin", "d", mode=0o755, mtime=1_600_000_000),
    Spec("bin/sh", data=b"#!sh\n", mode=0o755, mtime=1_600_000_001),
    Spec("etc/os-release", data=b"ID=test\n", mtime=1_600_000_002),
]


def _container(made_at: int) -> list[Spec]:
    """What `docker export` streams of a container of IMAGE created at `made_at` (s)."""
    init = [Spec(p, "d", mode=0o755, mtime=made_at, uid=0, gid=0) for p in INIT_DIRS]
    init += [Spec(p, mode=0o755, mtime=made_at, uid=0, gid=0) for p in INIT_FILES]
    init.append(Spec("etc/mtab", "l", target="/proc/mounts", mtime=made_at, uid=0, gid=0))
    return sorted([*IMAGE, *init], key=lambda s: s.name)


def _layer_dirs(tmp: Path, made_at: int) -> list[str]:
    """The same container as overlay2 layer dirs, top first: its init layer, the image's."""
    init, image = tmp / "init", tmp / "image"
    for spec in _container(made_at):
        top = any(spec.name == p for p in [*INIT_DIRS, *INIT_FILES, "etc/mtab"])
        full = (init if top else image) / spec.name
        full.parent.mkdir(parents=True, exist_ok=True)
        if spec.kind == "d":
            full.mkdir(exist_ok=True)
        elif spec.kind == "l":
            full.symlink_to(spec.target)
        else:
            full.write_bytes(spec.data)
        if spec.kind != "l":
            os.chmod(full, spec.mode)
    for spec in sorted(_container(made_at), key=lambda s: -s.name.count("/")):
        for layer in (init, image):
            full = layer / spec.name
            if full.exists() or full.is_symlink():
                ns = spec.mtime * 10**9
                os.utime(full, ns=(ns, ns), follow_symlinks=False)
    return [str(init), str(image)]


def _export(root: Path, made_at: int, dirs: list[str] | None) -> verbs.ExportResult:
    info = SourceInfo("image", "test/img:1", "sha256:" + "ab" * 32, created=CREATED, layers=["l"])
    data = tar_bytes(_container(made_at))
    opener: Callable[[], IO[bytes]] = lambda: io.BytesIO(data)  # noqa: E731

    def apply(w: Writer) -> object:
        return apply_image(info, dirs, opener, w)

    return verbs.export(Source(info, apply), root, "img")  # type: ignore[arg-type]


@pytest.mark.parametrize("by", ["stream", "layer-dirs"])
def test_two_containers_of_one_image_give_one_tree(tmp_path: Path, by: str) -> None:
    trees = []
    for made_at in (1_700_000_000, 1_700_000_777):
        dirs = _layer_dirs(tmp_path / f"dirs{made_at}", made_at) if by == "layer-dirs" else None
        done = _export(tmp_path / f"root{made_at}", made_at, dirs)
        assert done.manifest.source["via"] == ("layer-dirs" if dirs else "docker-export")
        trees.append(done.manifest)
    assert trees[0].version == trees[1].version
    assert trees[0].tree_hash == trees[1].tree_hash
    layout = Layout(tmp_path / "root1700000000", "img")
    entries = verbs.read_manifest(layout, trees[0].version).entries
    made = {p for p in CONTAINER_MADE if p in entries}
    assert made >= {"proc", "sys", "dev", "etc", "etc/mtab"}
    assert {entries[p].mtime_ns for p in made} == {IMAGE_TIME}
    # The image's own entries keep their own times.
    assert entries["bin/sh"].mtime_ns == 1_600_000_001 * 10**9


def test_stream_and_layer_dirs_give_one_tree(tmp_path: Path) -> None:
    by_stream = _export(tmp_path / "a", 1_700_000_000, None).manifest
    by_dirs = _export(tmp_path / "b", 1_700_000_555, _layer_dirs(tmp_path / "d", 1_700_000_555))
    assert by_stream.tree_hash == by_dirs.manifest.tree_hash


@pytest.mark.parametrize(
    ("created", "seconds"),
    [
        ("2024-05-06T07:08:09.123456789Z", 1_714_979_289),
        ("2024-05-06T09:08:09+02:00", 1_714_979_289),
        ("0001-01-01T00:00:00Z", 0),
        ("", 0),
        ("not a time", 0),
    ],
)
def test_image_time(created: str, seconds: int) -> None:
    assert image_time_ns(created) == seconds * 10**9
