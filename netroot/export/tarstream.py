"""A lean streaming tar reader (ustar, GNU long names, pax incl. SCHILY.xattr).

tarfile's stream mode copies every data block through Python-level buffers; this reads the
underlying file object directly, so content moves in large reads and a member costs one
header parse. Header fields are decoded by tarfile.TarInfo.frombuf (checksums, base-256).
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from typing import IO

from netroot.errors import UsageError
from netroot.export.members import Member, UnsafeMember, from_tarinfo

BLOCK = 512
ENCODING = "utf-8"
ERRORS = "surrogateescape"


class NotATar(UsageError):
    """The input is not a tar archive (or is truncated)."""


class MemberData:
    """The content of the current member; reading past its end returns b''."""

    def __init__(self, f: IO[bytes], size: int) -> None:
        self._f = f
        self.remaining = size

    def read(self, n: int = -1) -> bytes:
        if n < 0 or n > self.remaining:
            n = self.remaining
        if n == 0:
            return b""
        data = self._f.read(n)
        if len(data) < n:
            # Short reads happen on pipes; loop until the member's bytes are there.
            parts = [data]
            got = len(data)
            while got < n:
                more = self._f.read(n - got)
                if not more:
                    raise NotATar("archive truncated inside a member's data")
                parts.append(more)
                got += len(more)
            data = b"".join(parts)
        self.remaining -= n
        return data

    def readinto(self, buf: memoryview) -> int:
        """Fill `buf` (or what is left of the member) without allocating: returns the count."""
        n = min(len(buf), self.remaining)
        got = 0
        while got < n:
            k = self._f.readinto(buf[got:n])  # type: ignore[attr-defined]
            if not k:
                raise NotATar("archive truncated inside a member's data")
            got += k
        self.remaining -= n
        return n

    def skip(self) -> None:
        if self.remaining:
            scratch = memoryview(bytearray(min(self.remaining, 1 << 20)))
            while self.remaining:
                self.readinto(scratch)


def _read_exact(f: IO[bytes], n: int) -> bytes:
    data = f.read(n)
    while len(data) < n:
        more = f.read(n - len(data))
        if not more:
            break
        data += more
    return data


def _pad(size: int) -> int:
    return -size % BLOCK


def _parse_pax(raw: bytes, where: str) -> dict[str, bytes]:
    records: dict[str, bytes] = {}
    pos = 0
    while pos < len(raw):
        if raw[pos] == 0:
            break
        space = raw.find(b" ", pos)
        try:
            length = int(raw[pos:space])
        except ValueError:
            raise NotATar(f"bad pax header near {where!r}") from None
        record = raw[space + 1 : pos + length]
        if length <= 0 or not record.endswith(b"\n") or b"=" not in record:
            raise NotATar(f"bad pax record near {where!r}")
        key, _, value = record[:-1].partition(b"=")
        records[key.decode(ENCODING, ERRORS)] = value
        pos += length
    return records


def _apply_pax(ti: tarfile.TarInfo, pax: dict[str, bytes]) -> None:
    text = {k: v.decode(ENCODING, ERRORS) for k, v in pax.items()}
    ti.pax_headers = text
    if "path" in text:
        ti.name = text["path"]
    if "linkpath" in text:
        ti.linkname = text["linkpath"]
    for key in ("size", "uid", "gid"):
        if key in text:
            try:
                setattr(ti, key, int(text[key]))
            except ValueError:
                raise NotATar(f"bad pax {key} for {ti.name!r}") from None
    if "GNU.sparse.map" in text or "GNU.sparse.size" in text:
        raise UnsafeMember(ti.name, "sparse files are not supported")


def read_members(f: IO[bytes], where: str) -> Iterator[tuple[Member, MemberData]]:
    """Members of the tar read from `f`, each with its data (consumed or skipped after)."""
    global_pax: dict[str, bytes] = {}
    pax: dict[str, bytes] = {}
    long_name: str | None = None
    long_link: str | None = None
    first = True
    while True:
        block = _read_exact(f, BLOCK)
        if len(block) < BLOCK:
            if first:
                raise NotATar(f"{where}: not a tar archive (empty or too short)")
            raise NotATar(f"{where}: archive truncated (no end-of-archive marker)")
        if block.count(0) == BLOCK:
            return
        try:
            ti = tarfile.TarInfo.frombuf(block, ENCODING, ERRORS)
        except tarfile.HeaderError as exc:
            what = "not a tar archive" if first else "corrupt tar header"
            raise NotATar(f"{where}: {what} ({exc})") from None
        first = False
        size = ti.size
        if ti.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE):
            raw = _read_exact(f, size + _pad(size))[:size]
            records = _parse_pax(raw, ti.name)
            if ti.type == tarfile.XGLTYPE:
                global_pax.update(records)
            else:
                pax.update(records)
            continue
        if ti.type in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            raw = _read_exact(f, size + _pad(size))[:size]
            value = raw.split(b"\0", 1)[0].decode(ENCODING, ERRORS)
            if ti.type == tarfile.GNUTYPE_LONGNAME:
                long_name = value
            else:
                long_link = value
            continue
        if ti.type == tarfile.GNUTYPE_SPARSE:
            raise UnsafeMember(ti.name, "sparse files are not supported")
        if long_name is not None:
            ti.name = long_name
        if long_link is not None:
            ti.linkname = long_link
        if global_pax or pax:
            _apply_pax(ti, {**global_pax, **pax})
        pax, long_name, long_link = {}, None, None
        member = from_tarinfo(ti)
        # Only regular files carry data in the stream (hard links, dirs, devices: none).
        stored = ti.size if ti.type in tarfile.REGULAR_TYPES else 0
        data = MemberData(f, stored)
        yield member, data
        data.skip()
        if stored:
            _read_exact(f, _pad(stored))
