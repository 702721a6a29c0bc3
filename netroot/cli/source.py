"""Open an export source: a tar path (rootfs or docker save) or an image in the local engine.

Here the CLI joins the engine adapter to the export: the adapter hands over values (what the
image is, its layer dirs, its export stream) and netroot.export.image writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from netroot.errors import UsageError
from netroot.export.request import Source
from netroot.export.sources import SourceInfo, SourceRead
from netroot.export.writer import Writer


def open_source(
    source: str, via: str = "auto", progress: Callable[[int, int], None] | None = None
) -> Source:
    """What the source is, and a function that writes its members into a Writer.

    For an image, `via` is `auto` (the engine's layer dirs when readable, else `docker
    export`) or `docker-export` (always the stream). `progress` hears of an archive being
    read to identify it (bytes so far)."""
    from netroot.export import sources

    path = Path(source)
    if path.exists():
        info = sources.inspect_archive(path, progress)

        def apply_archive(writer: Writer) -> SourceRead:
            return sources.apply_archive(info, writer)

        return Source(info, apply_archive)
    from netroot.adapters import docker
    from netroot.export.image import apply_image

    client = docker.client()
    image = docker.find_image(client, source)
    info = SourceInfo(
        kind="image",
        ref=image.ref,
        digest=image.digest,
        repo_tags=list(image.repo_tags),
        created=image.created,
        architecture=image.architecture,
        size=image.size,
        layers=list(image.layers),
    )

    def write_image(writer: Writer) -> SourceRead:
        with docker.image_files(client, image) as (dirs, open_stream):
            return apply_image(info, dirs, open_stream, writer, via, docker.docker_errors())

    return Source(info, write_image)


def name_for(source: str, info: SourceInfo) -> str:
    """The export name a source gets by default: its repository name."""
    from netroot.export.manifest import default_name

    ref = info.repo_tags[0] if info.kind != "tar" and info.repo_tags else source
    if ref.startswith("sha256:") or (info.kind == "image" and not info.repo_tags):
        raise UsageError(f"{source}: no repository name to use", "pass --name NAME")
    return default_name(ref)
