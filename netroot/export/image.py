"""Writing a local Docker image into a version, from what the engine adapter hands over.

The adapter (netroot/adapters/docker.py) gives values: the image's layer dirs when readable,
and a way to open its `docker export` stream. Which one is read, and how the Writer is fed,
is decided here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import IO

from netroot.errors import NetrootError
from netroot.export import overlay
from netroot.export.members import Member
from netroot.export.sources import SourceInfo, SourceRead, apply_stream
from netroot.export.writer import Writer

# What Docker makes in every container, even one only created for `docker export` (its "init
# layer": moby daemon/initlayer/setup_unix.go), above the image's own layers: these paths and
# the parents it makes for them, stamped with the time the container was created. So two
# exports of the same image differed here, and only here (their tree hashes too).
#
# The rule (docs/export.md): each of these paths keeps what Docker gives it (its kind, mode,
# owner, and its content: empty files, /etc/mtab -> /proc/mounts, which the leftover rules
# then handle as before), but its mtime is the image's `created` time, in whole seconds as
# `docker export` gives every time. `created` is part of the image's config, whose digest is
# the image id, so the same image gives the same tree on every export, control host and
# server. (Taking the image's own entries back instead is possible only from readable layer
# dirs, not from the `docker export` stream: the two ways of reading an image would then
# give different trees.)
CONTAINER_MADE = frozenset(
    {
        ".dockerenv",
        "dev",
        "dev/console",
        "dev/pts",
        "dev/shm",
        "etc",
        "etc/hostname",
        "etc/hosts",
        "etc/mtab",
        "etc/resolv.conf",
        "proc",
        "sys",
    }
)
RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$"
)


def image_time_ns(created: str) -> int:
    """The image's `created` time in whole seconds (as ns); 0 when absent or before 1970
    (builders that set no time write 0001-01-01 or 1970-01-01)."""
    found = RFC3339.match(created.strip())
    if not found:
        return 0
    day, clock, zone = found.groups()
    zone = "+00:00" if zone in (None, "Z", "z") else zone
    try:
        when = dt.datetime.fromisoformat(f"{day}T{clock}{zone}")
    except ValueError:
        return 0
    return max(0, int(when.timestamp())) * 1_000_000_000


def container_made(created: str) -> Callable[[Member], Member]:
    """The member as the version holds it: a path Docker made gets the image's time."""
    stamp = image_time_ns(created)

    def adjust(m: Member) -> Member:
        return replace(m, mtime_ns=stamp) if m.path in CONTAINER_MADE else m

    return adjust


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
    adjust = container_made(info.created)
    if dirs is not None and via == "auto":
        return SourceRead("layer-dirs", overlay.apply_merged(dirs, info.layers, writer, adjust))
    with open_stream() as stream:
        try:
            apply_stream(stream, writer, info.ref, adjust=adjust)
        except stream_errors as exc:
            raise NetrootError(f"docker export {info.ref}: {exc}") from None
    origins = overlay.origins(dirs, len(info.layers)) if dirs is not None else {}
    return SourceRead("docker-export", origins)
