"""A lean streaming tar reader (ustar, GNU long names, pax incl. SCHILY.xattr).

tarfile's stream mode copies every data block through Python-level buffers; this reads the
underlying file object directly, so content moves in large reads and a member costs one
header parse. Header fields are decoded by tarfile.TarInfo.frombuf (checksums, base-256).

Where tarfile is not sound for untrusted input, this works around it: tarfile reads a GNU
long name or a pax header into memory whole, whatever size it declares (here: bounded,
LONG_NAME_MAX / PAX_MAX, refused past that after reading a short prefix for the message);
and it silently skips what it cannot represent. Sparse members (old GNU, PAX 0.0/0.1/1.0)
are recognised here and refused by format name, never written as their raw map.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from typing import IO

from netroot.errors import UsageError
from netroot.export.members import PATH_MAX, Member, UnsafeMember, from_tarinfo, shown

BLOCK = 512
ENCODING = "utf-8"
ERRORS = "surrogateescape"
# Extended headers are held in memory whole: bounded so a small compressed archive declaring a
# 1 GiB name costs nothing. A long name or link target can never exceed PATH_MAX anyway; a pax
# header carries at most a few xattrs of 64 KiB.
LONG_NAME_MAX = PATH_MAX
PAX_MAX = 1 << 20


class NotATar(UsageError):
    """The input is not a tar archive (or is truncated, or its compression is corrupt)."""

    def __init__(
        self,
        message: str,
        hint: str = "pass a root-filesystem tar, a `docker save` archive, or an image name",
    ) -> None:
        super().__init__(message, hint)


class MemberData:
    """The content of the current member; reading past its end returns b''."""

    def __init__(self, f: IO[bytes], size: int, name: str = "") -> None:
        self._f = f
        self.remaining = size
        self.name = name

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
                    raise self._truncated()
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
                raise self._truncated()
            got += k
        self.remaining -= n
        return n

    def _truncated(self) -> NotATar:
        return NotATar(
            f"refused archive member {shown(self.name)!r}: archive truncated inside its data "
            "(or its declared size lies)"
        )

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


def _skip(f: IO[bytes], n: int, name: str) -> None:
    data = MemberData(f, n, name)
    data.skip()


def _extended(f: IO[bytes], ti: tarfile.TarInfo, limit: int, what: str) -> bytes:
    """The data of an extended header (pax, GNU long name), refused past `limit` bytes."""
    size = ti.size
    if size < 0:
        raise UnsafeMember(ti.name, f"{what} with negative size")
    if size > limit:
        head = MemberData(f, size, ti.name).read(min(size, 256))
        name = head.split(b"\0", 1)[0].decode(ENCODING, ERRORS) if what != "pax header" else ""
        raise UnsafeMember(
            name or ti.name, f"{what} of {size} bytes (more than {limit} is never valid)"
        )
    raw = MemberData(f, size + _pad(size), ti.name).read()
    if len(raw) < size:
        raise UnsafeMember(ti.name, f"archive truncated inside a {what}")
    return raw[:size]


def sparse_format(pax: dict[str, str]) -> str | None:
    """Which GNU sparse format a pax header declares (None: not sparse)."""
    keys = [k for k in pax if k.startswith("GNU.sparse.")]
    if not keys:
        return None
    if "GNU.sparse.major" in pax:
        return f"GNU sparse PAX {pax['GNU.sparse.major']}.{pax.get('GNU.sparse.minor', '0')}"
    if "GNU.sparse.map" in pax:
        return "GNU sparse PAX 0.1"
    return "GNU sparse PAX 0.0"


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
    sparse = sparse_format(text)
    if sparse:
        # The real name (1.0 stores it apart; the header name is GNUSparseFile.N/...).
        name = text.get("GNU.sparse.name") or text.get("path") or ti.name
        raise UnsafeMember(
            name, f"sparse file ({sparse}) is not supported; re-create the archive without --sparse"
        )
    if "path" in text:
        ti.name = text["path"]
    if "linkpath" in text:
        ti.linkname = text["linkpath"]
    for key in ("size", "uid", "gid"):
        if key in text:
            try:
                setattr(ti, key, int(text[key]))
            except ValueError:
                raise UnsafeMember(ti.name, f"bad pax {key} {shown(text[key], 40)!r}") from None


def read_members(f: IO[bytes], where: str) -> Iterator[tuple[Member, MemberData]]:
    """Members of the tar read from `f`, each with its data (consumed or skipped after)."""
    global_pax: dict[str, bytes] = {}
    pax: dict[str, bytes] = {}
    long_name: str | None = None
    long_link: str | None = None
    first = True
    previous = ""  # named in errors about what follows it
    while True:
        block = _read_exact(f, BLOCK)
        if len(block) < BLOCK:
            if first:
                raise NotATar(f"{where}: not a tar archive (empty or too short)")
            raise NotATar(
                f"{where}: archive truncated after member {shown(previous)!r} "
                "(no end-of-archive marker)"
            )
        if block.count(0) == BLOCK:
            return
        try:
            ti = tarfile.TarInfo.frombuf(block, ENCODING, ERRORS)
        except tarfile.HeaderError as exc:
            what = "not a tar archive" if first else f"corrupt tar header after {shown(previous)!r}"
            raise NotATar(f"{where}: {what} ({exc})") from None
        first = False
        if ti.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE):
            raw = _extended(f, ti, PAX_MAX, "pax header")
            records = _parse_pax(raw, ti.name)
            if ti.type == tarfile.XGLTYPE:
                global_pax.update(records)
            else:
                pax.update(records)
            continue
        if ti.type in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            what = "GNU long name" if ti.type == tarfile.GNUTYPE_LONGNAME else "GNU long link"
            raw = _extended(f, ti, LONG_NAME_MAX, what)
            value = raw.split(b"\0", 1)[0].decode(ENCODING, ERRORS)
            if ti.type == tarfile.GNUTYPE_LONGNAME:
                long_name = value
            else:
                long_link = value
            continue
        if ti.type == tarfile.GNUTYPE_SPARSE:
            name = long_name if long_name is not None else ti.name
            raise UnsafeMember(
                name,
                "sparse file (GNU old sparse format) is not supported; "
                "re-create the archive without --sparse",
            )
        if long_name is not None:
            ti.name = long_name
        if long_link is not None:
            ti.linkname = long_link
        if global_pax or pax:
            _apply_pax(ti, {**global_pax, **pax})
        pax, long_name, long_link = {}, None, None
        previous = ti.name
        member = from_tarinfo(ti)
        # Only regular files carry data in the stream (hard links, dirs, devices: none).
        stored = ti.size if ti.type in tarfile.REGULAR_TYPES else 0
        data = MemberData(f, stored, ti.name)
        yield member, data
        data.skip()
        if stored:
            _skip(f, _pad(stored), ti.name)
