"""Point netboot boards' TFTP directories at their versions, on the NFS server (the server side).

The server role installs it as `<netroot_nfs_server_lib_dir>/netroot-tftp`, one file with the
modules it imports (netroot.bundle.server_program), and the board role runs that on the server
(delegated) for each board it switches:

    python3 -I <lib>/netroot-tftp --check|--apply < request.json

with the request `{"root": TFTP_ROOT, "boards": [{"board", "serial", "version", "cmdline",
"version_root", optionally "mac"}]}`. It scans each version's boot files, plans the tree
(netroot.remote.tree) and applies it under an exclusive lock on `<root>/.lock` (Ansible
switches several boards of a batch at once, each in its own process), printing one
`changed: ...` line per change. With --check it prints what it would change and writes
nothing. A refusal is one line on stderr, exit 1. The server has the netroot modules this
imports (carried in that file), not netroot itself: standard library and
netroot.errors/fsutil/remote.tree/uboot only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from netroot.errors import UsageError
from netroot.remote.tree import (
    BoardBoot,
    VersionBoot,
    apply_tree,
    pending,
    plan_tree,
    scan_version,
)

LOCK = ".lock"


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the tree's lock (blocks while another switch runs)."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / LOCK).open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def parse_request(data: Any) -> tuple[Path, list[BoardBoot], dict[str, Path]]:
    """(tftp root, boards, version -> version root) from the request; UsageError when malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("boards"), list):
        raise UsageError("request: expected {'root': ..., 'boards': [...]}")
    root = data.get("root")
    if not isinstance(root, str) or not root.startswith("/"):
        raise UsageError(f"request: root {root!r} is not an absolute path")
    boards, roots = [], {}
    for entry in data["boards"]:
        fields = ("board", "serial", "version", "cmdline", "version_root")
        if not isinstance(entry, dict) or not all(isinstance(entry.get(f), str) for f in fields):
            raise UsageError(f"request: a board needs {', '.join(fields)} (strings): {entry!r}")
        mac = entry.get("mac", "")
        if not isinstance(mac, str):
            raise UsageError(f"request: {entry['board']}: mac {mac!r} is not a string")
        boards.append(
            BoardBoot(entry["board"], entry["serial"], entry["version"], entry["cmdline"], mac)
        )
        roots[entry["version"]] = Path(entry["version_root"])
    return Path(root), boards, roots


def switch(data: Any, check: bool) -> list[str]:
    """Plan the request's boards and apply (or, with check, only report) the changes."""
    root, boards, roots = parse_request(data)
    versions: dict[str, VersionBoot] = {v: scan_version(v, r) for v, r in roots.items()}
    plan = plan_tree(root, boards, versions)
    if check:
        return pending(plan)
    with locked(root):
        return apply_tree(plan)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    try:
        changes = switch(json.loads(sys.stdin.read()), check)
    except json.JSONDecodeError as exc:
        print(f"netroot-tftp: request is not JSON: {exc}", file=sys.stderr)
        return 1
    except (UsageError, OSError) as exc:
        hint = f" ({exc.hint})" if isinstance(exc, UsageError) and exc.hint else ""
        print(f"netroot-tftp: {exc}{hint}", file=sys.stderr)
        return 1
    for change in changes:
        print(f"changed: {change}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
