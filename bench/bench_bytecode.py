"""Two builds of one tree, their Python bytecode compared (not a test; no lab, no build).

    .venv/bin/python -m bench.bench_bytecode BEFORE.tar AFTER.tar

For the trees netroot/lab/host/bytecode.py compiles on the host: BEFORE built with py3compile
under qemu-user, AFTER with the host's interpreter. Prints JSON: the .pyc files only one tree
holds; of those both hold, how many are byte-identical, how many have the same header (magic,
flags, source mtime and size: the invalidation data) and equal code objects (marshal.loads,
code == code: bytecode, constants, names, line and exception tables) with the same co_filename
throughout, and which do not; and every other entry of the trees (type, mode, owner, size, link,
content) that differs, apart from the files every build writes anew. Run it with the trees'
Python release (3.11): marshal's format is that of the release.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import marshal
import sys
import tarfile
import types
from pathlib import Path
from typing import Any

from bench.bench_lab_build import VARYING


def _filenames(code: types.CodeType) -> list[str]:
    out = [code.co_filename]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += _filenames(const)
    return out


def _read(path: Path) -> tuple[dict[str, bytes], dict[str, tuple[Any, ...]]]:
    """Every .pyc's bytes, and every other entry's metadata and digest."""
    pycs: dict[str, bytes] = {}
    rest: dict[str, tuple[Any, ...]] = {}
    with tarfile.open(path) as tar:
        for m in tar:
            name = m.name.removeprefix("./")
            if name.startswith(VARYING):
                continue
            data = b""
            if m.isfile():
                fh = tar.extractfile(m)
                data = fh.read() if fh else b""
            if name.endswith(".pyc"):
                pycs[name] = data
                rest[name] = (m.type, m.mode, m.uid, m.gid)  # the size may differ (below)
            else:
                digest = hashlib.sha256(data).hexdigest() if m.isfile() else ""
                rest[name] = (m.type, m.mode, m.uid, m.gid, m.size, m.linkname, digest)
    return pycs, rest


def compare(before: Path, after: Path) -> dict[str, Any]:
    left, left_rest = _read(before)
    right, right_rest = _read(after)
    common = sorted(left.keys() & right.keys())
    identical = header = code_equal = 0
    differ: list[str] = []
    for name in common:
        a, b = left[name], right[name]
        if a == b:
            identical += 1
            continue
        same_header = a[:16] == b[:16]
        header += same_header
        ca, cb = marshal.loads(a[16:]), marshal.loads(b[16:])
        if same_header and ca == cb and _filenames(ca) == _filenames(cb):
            code_equal += 1
        else:
            differ.append(name)
    rest_differ = sorted(
        n for n in left_rest.keys() & right_rest.keys() if left_rest[n] != right_rest[n]
    )
    return {
        "pyc_before": len(left),
        "pyc_after": len(right),
        "pyc_only_before": sorted(left.keys() - right.keys())[:20],
        "pyc_only_after": sorted(right.keys() - left.keys())[:20],
        "pyc_byte_identical": identical,
        "pyc_bytes_differ_same_header_and_code": code_equal,
        "pyc_differ": differ[:20],
        "pyc_differ_count": len(differ),
        "entries": len(left_rest),
        "entries_only_before": sorted(left_rest.keys() - right_rest.keys())[:20],
        "entries_only_after": sorted(right_rest.keys() - left_rest.keys())[:20],
        "entries_differ": rest_differ[:40],
        "python": sys.version.split()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    print(json.dumps(compare(args.before, args.after), indent=2))


if __name__ == "__main__":
    main()
