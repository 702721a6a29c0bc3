"""Container leftovers: what a container image carries that must not be shared by all boards.

Decided from the entries the writer recorded; applied through the writer (which never
modifies a file in place, so a file shared with an older version is never touched).
"""

from __future__ import annotations

import fnmatch
import io

from netroot.export.members import Kind, Member
from netroot.export.writer import Writer

HOSTS_DEFAULT = b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
HOST_KEY_GLOBS = ("etc/ssh/ssh_host_*_key", "etc/ssh/ssh_host_*_key.pub", "etc/ssh/ssh_host_key*")


def _replace(writer: Writer, path: str, content: bytes) -> None:
    old = writer.expected[path]
    m = Member(path, Kind.FILE, old.mode, old.uid, old.gid, len(content), old.mtime_ns)
    writer.apply(m, io.BytesIO(content))


def _placeholder(writer: Writer, path: str, why: str) -> dict[str, str] | None:
    e = writer.expected.get(path)
    if e is None:
        writer.apply(Member(path, Kind.FILE, 0o644, 0, 0, 0, 0), io.BytesIO(b""))
        return {"path": "/" + path, "action": "created empty placeholder", "why": why}
    if e.kind == "f" and e.size:
        _replace(writer, path, b"")
        return {"path": "/" + path, "action": "emptied", "why": why}
    if e.kind == "f":
        return {"path": "/" + path, "action": "kept empty placeholder", "why": why}
    return {"path": "/" + path, "action": f"kept ({e.kind})", "why": why}


def handle(writer: Writer, keep_host_keys: bool) -> list[dict[str, str]]:
    """Apply the leftover rules; return what was done, for the manifest."""
    done: list[dict[str, str]] = []
    if ".dockerenv" in writer.expected:
        writer.whiteout(".dockerenv", False)
        done.append({"path": "/.dockerenv", "action": "removed", "why": "container marker"})
    for path, why in (
        ("etc/machine-id", "each board has its own identity"),
        ("etc/hostname", "each board has its own hostname"),
        ("etc/resolv.conf", "the board binds its own resolv.conf here"),
    ):
        if path == "etc/machine-id" and path not in writer.expected:
            continue  # no machine-id is fine: systemd makes one on the board's side
        change = _placeholder(writer, path, why)
        if change:
            done.append(change)
    hosts = writer.expected.get("etc/hosts")
    if hosts is not None and hosts.kind == "f" and hosts.size == 0:
        _replace(writer, "etc/hosts", HOSTS_DEFAULT)
        done.append(
            {
                "path": "/etc/hosts",
                "action": "wrote localhost entries",
                "why": "docker leaves it empty",
            }
        )
    ssh = [p for p in writer.expected if p.startswith("etc/ssh/")]
    keys = sorted(p for p in ssh if any(fnmatch.fnmatch(p, g) for g in HOST_KEY_GLOBS))
    for path in keys:
        if keep_host_keys:
            done.append({"path": "/" + path, "action": "kept", "why": "--keep-host-keys"})
        else:
            writer.whiteout(path, False)
            done.append(
                {
                    "path": "/" + path,
                    "action": "removed",
                    "why": "one host key shared by every board",
                }
            )
    return done
