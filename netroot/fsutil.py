"""Durable file writes, one copy for the whole package (pure standard library, no adapters)."""

from __future__ import annotations

import os
import tempfile
import zlib
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
    return read_log_from(path, None)[0]


# Where a follower is in a log: the part's inode, the offset read to, and a CRC of the part's
# first line (an inode is reused once its file is gone: the first line tells the parts apart).
LogCursor = tuple[int, int, int]


def _read_from(path: Path, cursor: LogCursor | None) -> tuple[str, LogCursor] | None:
    """`path`'s text from the cursor's offset on (all of it: None) and the cursor after it;
    None when there is no such file, or it is not the part the cursor was in."""
    try:
        with path.open("rb") as fh:
            st = os.fstat(fh.fileno())
            first = zlib.crc32(fh.readline())
            if cursor is not None and (cursor[0], cursor[2]) != (st.st_ino, first):
                return None
            offset = 0 if cursor is None else cursor[1]
            fh.seek(offset)
            data = fh.read()
            return data.decode(errors="replace"), (st.st_ino, offset + len(data), first)
    except FileNotFoundError:
        return None


def read_log_from(path: Path, cursor: LogCursor | None) -> tuple[str, LogCursor]:
    """A log rotated by `append_lines`, read on from `cursor` (None: all of it, the older part
    first): the new text and the cursor to read on from, so a follower reads each line once and
    never the whole log again. Once the log has rotated, the rest of the part that was live
    (now `path.1`) comes first; a cursor that neither part has any more (rotated twice) reads
    the whole log again."""
    older = path.with_name(path.name + ".1")
    head: str | None = None
    if cursor is not None:
        live = _read_from(path, cursor)
        if live is not None:
            return live
        rest = _read_from(older, cursor)
        if rest is not None:
            if not path.exists():  # between the rotation's rename and the next append
                return rest
            head = rest[0]
    if head is None:
        whole = _read_from(older, None)
        if whole is not None and not path.exists():
            return whole
        head = whole[0] if whole is not None else ""
    live = _read_from(path, None)
    if live is None:
        return head, (0, 0, 0)
    return head + live[0], live[1]
