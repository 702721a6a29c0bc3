"""A tiny writer for the initramfs format (cpio "newc"): no root and no cpio tool needed."""

from __future__ import annotations

import gzip
import stat
from dataclasses import dataclass

MAGIC = b"070701"


@dataclass(frozen=True)
class Entry:
    """One archive member: a directory, regular file, symlink or device node."""

    name: str  # without leading "/"
    mode: int  # full st_mode, type bits included
    data: bytes = b""  # file content, or a symlink's target
    rdev: tuple[int, int] = (0, 0)


def directory(name: str, perm: int = 0o755) -> Entry:
    return Entry(name, stat.S_IFDIR | perm)


def file(name: str, data: bytes, perm: int = 0o644) -> Entry:
    return Entry(name, stat.S_IFREG | perm, data)


def symlink(name: str, target: str) -> Entry:
    return Entry(name, stat.S_IFLNK | 0o777, target.encode())


def chardev(name: str, major: int, minor: int, perm: int = 0o600) -> Entry:
    return Entry(name, stat.S_IFCHR | perm, rdev=(major, minor))


def _pad(n: int) -> bytes:
    return b"\0" * ((4 - n % 4) % 4)


def _header(ino: int, entry: Entry, size: int, namesize: int) -> bytes:
    fields = (
        ino,
        entry.mode,
        0,  # uid: root
        0,  # gid: root
        2 if stat.S_ISDIR(entry.mode) else 1,
        0,  # mtime: fixed, so the archive is reproducible
        size,
        0,
        0,
        entry.rdev[0],
        entry.rdev[1],
        namesize,
        0,  # check
    )
    return MAGIC + b"".join(f"{v:08x}".encode() for v in fields)


def archive(entries: list[Entry]) -> bytes:
    """The uncompressed newc archive, ending with the TRAILER!!! record."""
    out = bytearray()
    for ino, entry in enumerate([*entries, Entry("TRAILER!!!", 0)], start=1):
        name = entry.name.lstrip("/").encode() + b"\0"
        data = entry.data if not stat.S_ISDIR(entry.mode) else b""
        head = _header(ino if entry.name != "TRAILER!!!" else 0, entry, len(data), len(name))
        out += head + name + _pad(len(head) + len(name)) + data + _pad(len(data))
    return bytes(out)


def gzipped(entries: list[Entry]) -> bytes:
    """The archive gzip-compressed, as the kernel's initramfs loader accepts it."""
    return gzip.compress(archive(entries), compresslevel=6, mtime=0)
