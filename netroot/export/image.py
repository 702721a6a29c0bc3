"""Writing a local Docker image into a version, from what the engine adapter hands over.

The adapter (netroot/adapters/docker.py) gives values: the image's layer dirs when readable,
and a way to open its `docker export` stream. Which one is read, and how the Writer is fed,
is decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import IO

from netroot.errors import NetrootError
from netroot.export import overlay
from netroot.export.sources import SourceInfo, SourceRead, apply_stream
from netroot.export.writer import Writer


def apply_image(
    info: SourceInfo,
    dirs: Sequence[str] | None,
    open_stream: Callable[[], IO[bytes]],
    writer: Writer,
    via: str = "auto",
    stream_errors: type[Exception] = OSError,
) -> SourceRead:
    """Write the image, labelling each file with the layer it comes from.

    `auto` reads the layer dirs when there are any (no tar stream through the daemon; files
    from layers shared with the previous version are hard-linked, not read), else streams;
    `docker-export` always streams. stream_errors: the engine's errors while streaming.
    """
    if dirs is not None and via == "auto":
        return SourceRead("layer-dirs", overlay.apply_merged(dirs, info.layers, writer))
    with open_stream() as stream:
        try:
            apply_stream(stream, writer, info.ref)
        except stream_errors as exc:
            raise NetrootError(f"docker export {info.ref}: {exc}") from None
    origins = overlay.origins(dirs, len(info.layers)) if dirs is not None else {}
    return SourceRead("docker-export", origins)
