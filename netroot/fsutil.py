"""Durable file writes, one copy for the whole package (pure standard library, no adapters)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename is durable only once its directory is)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | str, *, mode: int = 0o644, durable: bool = True) -> None:
    """Replace `path` with `data` so readers see the old or the new content, never a mix.

    A temporary file beside it is written, flushed (fsync when `durable`), given `mode` and
    renamed over `path`; the directory is fsynced too when `durable`. On any failure the
    temporary file is removed and `path` is untouched.
    """
    raw = data.encode() if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def append_lines(path: Path, lines: list[str], *, max_bytes: int, mode: int = 0o600) -> None:
    """Append whole lines to a log durably, rotating it to `path.1` once it holds `max_bytes`
    (so the log never takes more than about twice that). Each line is written with one
    O_APPEND write: a reader sees a line whole or not at all."""
    if not lines:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size >= max_bytes:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    try:
        for line in lines:
            os.write(fd, (line.rstrip("\n") + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read_log(path: Path) -> str:
    """A log rotated by `append_lines`: its text, the older part (`path.1`) first."""
    parts = []
    for part in (path.with_name(path.name + ".1"), path):
        try:
            parts.append(part.read_text(errors="replace"))
        except FileNotFoundError:
            continue
    return "".join(parts)
