"""The Docker engine, through the SDK: find images locally (never pull) and stream exports."""

from __future__ import annotations

import io
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import IO, Any

from netroot.errors import EnvironmentMissing, NetrootError, UsageError

DAEMON_HINT = "start the Docker engine (`bash .ci/setup` starts dockerd) or set DOCKER_HOST"
# create() needs a command even for images without one; it is never run.
PLACEHOLDER_CMD = ["/netroot-export-never-runs"]


def client() -> Any:
    """A connected SDK client, or EnvironmentMissing when the engine does not answer."""
    import docker

    try:
        c = docker.from_env(timeout=120)
        c.ping()
    except docker.errors.DockerException as exc:
        raise EnvironmentMissing(
            f"Docker engine unreachable: {str(exc).splitlines()[0]}", DAEMON_HINT
        ) from None
    return c


@dataclass(frozen=True)
class Image:
    """What the local engine says of an image (values only: the export decides what to do)."""

    ref: str
    digest: str  # the image id
    repo_tags: list[str] = field(default_factory=list)
    created: str = ""
    architecture: str = ""
    size: int = 0
    layers: list[str] = field(default_factory=list)  # RootFS layer digests, bottom first


def find_image(c: Any, ref: str) -> Image:
    """Look the image up in the local engine only; a missing image is an error naming it."""
    import docker

    try:
        image = c.images.get(ref)
    except docker.errors.ImageNotFound:
        raise UsageError(
            f"image {ref!r} is not in the local Docker engine",
            "build it first (`docker build --pull=false -t NAME:TAG ...`); netroot never pulls",
        ) from None
    except docker.errors.APIError as exc:
        raise UsageError(f"image {ref!r}: {exc.explanation or exc}") from None
    attrs = image.attrs
    arch = "/".join(x for x in (attrs.get("Architecture", ""), attrs.get("Variant", "")) if x)
    return Image(
        ref=ref,
        digest=str(image.id),
        repo_tags=list(image.tags),
        created=str(attrs.get("Created", "")),
        architecture=arch,
        size=int(attrs.get("Size") or 0),
        layers=list((attrs.get("RootFS") or {}).get("Layers") or []),
    )


class _ChunkReader(io.RawIOBase):
    """A file object over the SDK's chunk generator (the tar reader wants readinto())."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]  # a view: no copy of the rest
        return n


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def remove_stale(c: Any) -> list[str]:
    """Remove export containers whose netroot process is gone (killed with -9, say)."""
    import docker

    host = socket.gethostname()
    removed = []
    for container in c.containers.list(all=True, filters={"label": "netroot=export"}):
        labels = container.labels or {}
        if labels.get("netroot.host") == host and not _alive(labels.get("netroot.pid", "")):
            with suppress(docker.errors.DockerException):
                container.remove(force=True)
                removed.append(container.id)
    return removed


@contextmanager
def created(c: Any, image_id: str) -> Iterator[Any]:
    """A container created (never started) from a local image, removed afterwards."""
    import docker

    remove_stale(c)
    labels = {
        "netroot": "export",
        "netroot.pid": str(os.getpid()),
        "netroot.host": socket.gethostname(),
    }
    try:
        container = c.containers.create(
            image_id, command=PLACEHOLDER_CMD, network_disabled=True, labels=labels
        )
    except docker.errors.ImageNotFound:
        raise UsageError(f"image {image_id} vanished from the local engine") from None
    except docker.errors.APIError as exc:
        raise NetrootError(f"docker create {image_id}: {exc.explanation or exc}") from None
    try:
        yield container
    finally:
        with suppress(docker.errors.DockerException):
            container.remove(force=True)


def export_stream(container: Any) -> IO[bytes]:
    """The container's flattened filesystem as a tar stream (`docker export`)."""
    import docker

    try:
        chunks = iter(container.export(chunk_size=None))
    except docker.errors.APIError as exc:
        raise NetrootError(f"docker export {container.id}: {exc.explanation or exc}") from None
    return io.BufferedReader(_ChunkReader(chunks), buffer_size=1 << 20)


def layer_dirs(container: Any, image_layers: int) -> list[str] | None:
    """The container's overlay2 layer dirs, top first (init layer, then the image's), when
    this process can read them; None otherwise (remote engine, other driver, not root)."""
    driver = container.attrs.get("GraphDriver") or {}
    data = driver.get("Data") or {}
    if driver.get("Name") != "overlay2" or not data.get("LowerDir"):
        return None
    dirs = str(data["LowerDir"]).split(":")
    upper = str(data.get("UpperDir", ""))
    if len(dirs) != image_layers + 1 or not all(os.access(d, os.R_OK | os.X_OK) for d in dirs):
        return None
    if not os.path.isdir(upper) or os.listdir(upper):
        return None  # never started, so its own layer must be empty
    return dirs


@contextmanager
def image_files(c: Any, image: Image) -> Iterator[tuple[list[str] | None, Callable[[], IO[bytes]]]]:
    """A container created (never started) from `image`, handed over as values: its overlay2
    layer dirs when this process can read them (None otherwise), and a way to open its
    flattened filesystem as a tar stream (`docker export`). Removed afterwards."""
    with created(c, image.digest) as container:
        yield layer_dirs(container, len(image.layers)), lambda: export_stream(container)


def docker_errors() -> type[Exception]:
    import docker

    return docker.errors.DockerException  # type: ignore[no-any-return]
