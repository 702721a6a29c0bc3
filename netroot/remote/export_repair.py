"""The server's half of `netroot export SOURCE --repair` on a remote export root (runs ON the
server, sent with the export's helper: `--repair ROOT NAME VID`).

Under the export name's lock, the committed version is re-hashed against its manifest and the
damaged paths are named in the hello (with the staging dir they are to be sent to). Nothing
damaged: done. Else the control host rsyncs its good copy of those paths (from its mirror,
built from the source) into staging/VID and asks `{"op": "repair"}`: the good copy is checked
path by path against the manifest here, the version put back in place (netroot.export.repair
says why in place: boards keep their mounts), re-hashed, and staging/VID removed. EOF before
the request changes nothing in the version.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from netroot.export import repair, versiontree
from netroot.export.fstree import ignore, remove_tree
from netroot.export.manifest import VERSION_RE, Layout, Manifest, check_name, diff_entries, try_lock
from netroot.export.scan import scan


def _reply(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def repair_session(root: Path, name: str, vid: str) -> int:
    layout = Layout(root, check_name(name))
    if not VERSION_RE.match(vid) or not layout.manifest_path(vid).is_file():
        _reply({"ok": False, "error": f"no version {vid} of {name!r} under {root} to repair"})
        return 2
    versiontree.make_dirs(layout)
    if try_lock(layout) is None:  # held until this process ends
        _reply({"ok": False, "busy": True, "error": f"another export or prune of {name!r} runs"})
        return 1
    versiontree.clean_stale(layout)
    manifest = Manifest.from_json(layout.manifest_path(vid).read_text())
    version = layout.version_dir(vid)
    actual = scan(str(version))
    paths = repair.damaged(manifest.entries, actual)
    staged = layout.staging / vid
    if paths:
        staged.mkdir(mode=0o755)
    sendable = [p for p in paths if p in manifest.entries]
    summary = versiontree.summary(layout, vid).to_json()
    _reply({"ok": True, "damaged": paths, "send": sendable, "staging": str(staged),
            "manifest": summary})  # fmt: skip
    try:
        line = sys.stdin.buffer.readline()
        if not paths or not line.strip():
            return 0
        if json.loads(line).get("op") != "repair":
            raise ValueError("expected a repair request")
        good = scan(str(staged))
        bad = repair.check_good(paths, manifest.entries, good)
        if bad:
            _reply({"ok": False, "error": "the good copy sent differs from the manifest at "
                    + ", ".join("/" + p for p in bad[:5]), "unrepairable": bad})  # fmt: skip
            return 3
        done = repair.repair(version, staged, manifest.entries, actual)
        os.sync()
        remaining = diff_entries(manifest.entries, scan(str(version)))
        _reply({"ok": True, "done": done, "remaining": remaining})
        return 0
    finally:
        remove_tree(str(staged), ignore)
