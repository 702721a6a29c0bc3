"""The Docker engine, through the SDK: find images locally (never pull) and stream exports."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

from netroot.errors import EnvironmentMissing, NetrootError, UsageError
from netroot.export.sources import SourceInfo

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


def find_image(c: Any, ref: str) -> SourceInfo:
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
    return SourceInfo(
        kind="image",
        ref=ref,
        digest=str(image.id),
        repo_tags=list(image.tags),
        created=str(attrs.get("Created", "")),
        architecture=arch,
        size=int(attrs.get("Size") or 0),
        layers=list((attrs.get("RootFS") or {}).get("Layers") or []),
    )


class _ChunkReader(io.RawIOBase):
    """A file object over the SDK's chunk generator (tarfile wants read())."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


@contextmanager
def export_stream(c: Any, image_id: str) -> Iterator[IO[bytes]]:
    """The flattened filesystem of a container created (never started) from a local image."""
    import docker

    try:
        container = c.containers.create(
            image_id, command=PLACEHOLDER_CMD, network_disabled=True, labels={"netroot": "export"}
        )
    except docker.errors.ImageNotFound:
        raise UsageError(f"image {image_id} vanished from the local engine") from None
    except docker.errors.APIError as exc:
        raise NetrootError(f"docker create {image_id}: {exc.explanation or exc}") from None
    try:
        raw = _ChunkReader(iter(container.export(chunk_size=None)))
        yield io.BufferedReader(raw, buffer_size=1 << 20)
    except docker.errors.APIError as exc:
        raise NetrootError(f"docker export {image_id}: {exc.explanation or exc}") from None
    finally:
        with suppress(docker.errors.DockerException):
            container.remove(force=True)
