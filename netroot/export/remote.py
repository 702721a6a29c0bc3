"""Export to an NFS server that is another machine: built here, sent with rsync, committed there.

When the inventory's NFS server has `netroot_export_remote: true`, its `netroot_export_root`
is a path on the server and this control host has none. An export then:

1. opens a helper session on the server over SSH with become (netroot.remote.export, sent
   as source in the command line by netroot.bundle: nothing is installed there): it takes the
   export name's lock there, cleans what killed runs left and says whether the version already
   exists (a no-op: nothing is built or sent);
2. builds the version in a local mirror export root (the local export, with every guard it
   has: hostile archive members are refused HERE, before anything leaves the machine, and the
   tree is verified against its manifest), hard-linking unchanged files from the mirror's
   previous version;
3. rsyncs the mirror's tree into the server's staging/VID (`-aHAX --numeric-ids --sparse`,
   `--link-dest` the server's current and newest versions: only changed files cross the wire,
   unchanged ones become hard links there); an interrupted transfer resumes into staging/VID;
4. sends the manifest to the session, which re-hashes the staged tree ON THE SERVER against it
   and only then renames it into versions/ with its manifest and switches `current`.

`versions`, `prune` and `verify` ask the same helper one question each (--list, --prune,
--verify). SSH, rsync and the session go through netroot.adapters.server (the inventory's user
and key, known_hosts checked strictly, `sudo -n`, children that die with this process).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

from netroot.adapters import server as adapter
from netroot.adapters.ssh import resolve
from netroot.bundle import helper_command
from netroot.errors import Exit, NetrootError, UsageError
from netroot.export import service
from netroot.export.manifest import BUSY_HINT, Layout, Manifest, check_name
from netroot.export.sources import SourceInfo, SourceRead
from netroot.export.versiontree import PrunePlan
from netroot.export.writer import Progress
from netroot.inventory import NfsServer
from netroot.paths import cache_dir
from netroot.sshtarget import SshTarget, target_for

# Times compared to the nanosecond (--modify-window=-1; the server's rsync >= 3.1.3). By
# default rsync compares whole seconds and leaves a time it finds "unchanged": a directory it
# creates within the second of its own mtime keeps its creation time, nanoseconds included
# (docker's /proc and /sys are made when the export's container is created, and a fast
# re-export reached the server within that second: the server refused the tree), and a
# --link-dest file whose time differs only in nanoseconds is linked with the old time.
EXACT_TIMES = "--modify-window=-1"
RSYNC_FLAGS = (
    "-aHAX",
    "--numeric-ids",
    "--sparse",
    "--delete",
    "--stats",
    "--timeout=300",
    EXACT_TIMES,
)


@dataclass
class RemoteResult:
    result: service.ExportResult
    server: str
    path: str  # the version's directory on the server
    bytes_sent: int  # rsync's "Total bytes sent" (0 for a no-op)
    literal_bytes: int  # file data actually sent (the rest were links or matched blocks)


def _send(
    target: SshTarget,
    tree: Path,
    hello: dict[str, Any],
    suspects: list[str],
    progress: Progress | None,
) -> dict[str, int]:
    """rsync the tree into the server's staging dir; then the quick check's blind spots.

    `suspects` are files a link-dest version has with the same size and mtime but other
    bytes (the helper found them from the manifests): rsync's quick check would keep the old
    bytes, so they are sent again with --checksum (a new inode replaces the linked one; the
    committed version is never touched)."""
    links = [f"--link-dest={base}" for base in hello["bases"]]
    dest = f"{hello['staging']}/"
    what = f"sending {tree.name}"
    stats = adapter.rsync(target, [f"{tree}/"], dest, [*RSYNC_FLAGS, *links], what, progress)
    if suspects:
        with tempfile.NamedTemporaryFile(prefix="netroot-suspects-") as listing:
            # NUL-separated, as bytes: a name may hold a newline or bytes that are not UTF-8.
            listing.write(b"".join(os.fsencode(path) + b"\0" for path in suspects))
            listing.flush()
            flags = ["-aHAX", "--numeric-ids", "--sparse", "--checksum", "--stats", "--from0"]
            flags.append(EXACT_TIMES)
            again = adapter.rsync(
                target, [f"{tree}/"], dest, [*flags, f"--files-from={listing.name}"], what
            )
        for key in ("total bytes sent", "literal data"):
            stats[key] = stats.get(key, 0) + again.get(key, 0)
    return stats


def _once(server: NfsServer, args: list[str], what: str) -> dict[str, Any]:
    """One request to the export helper on the server (--verify, --list, --prune)."""
    target = remote_target(server)
    proc = adapter.spawn(
        [
            *adapter.ssh_argv(target),
            target.host,
            target.privileged(helper_command("netroot.remote.export", args)),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate()
    line = out.decode(errors="replace").strip()
    if not line:
        raise adapter.ssh_failure(target, what, proc.returncode, err.decode(errors="replace"))
    reply: dict[str, Any] = json.loads(line.splitlines()[-1])
    if reply.get("busy"):
        raise NetrootError(f"{server.name}: {reply['error']}", BUSY_HINT, Exit.BUSY)
    if not reply.get("ok"):
        raise UsageError(
            f"{server.name}: {reply.get('error')}", f"see `netroot versions` on {server.name}"
        )
    return reply


def verify_remote(server: NfsServer, name: str, vid: str | None) -> dict[str, Any]:
    """Re-hash a version on the server against its manifest there (reads only)."""
    args = ["--verify", server.export_root, check_name(name), vid or ""]
    return _once(server, args, "verifying")


def versions_remote(server: NfsServer, name: str) -> tuple[str | None, list[Manifest]]:
    """`current` and the committed versions of NAME on the server, oldest first (reads only)."""
    reply = _once(server, ["--list", server.export_root, check_name(name)], "listing versions")
    found = [Manifest.from_json(text, entries=False) for text in reply["versions"]]
    return reply["current"], found


def prune_plan_remote(
    server: NfsServer,
    name: str,
    keep: int,
    protected: Mapping[str, Sequence[str]] | set[str],
    *,
    dry_run: bool = False,
) -> PrunePlan:
    """Prune on the server (under the export's lock there), or with `dry_run` only plan it
    (no lock, nothing written): what goes and why each other version stays."""
    why = service.reasons(protected)
    args = ["--prune", server.export_root, check_name(name), str(keep), "1" if dry_run else "0"]
    plan = _once(server, [*args, json.dumps(why, sort_keys=True)], "pruning")["plan"]
    return PrunePlan(list(plan["remove"]), dict(plan["kept"]), list(plan["order"]))


class Session(adapter.HelperSession):
    """The export's helper session on the server: holds the export's lock there while open."""

    def __init__(self, target: SshTarget, root: str, name: str, vid: str, mode: str = "") -> None:
        """mode: "" an export's session; "--repair" a repair's (netroot.remote.export_repair)."""
        args = [mode, root, name, vid] if mode else [root, name, vid]
        command = helper_command("netroot.remote.export", args)
        super().__init__(target, command, "starting the export helper")

    def reply_error(self, reply: dict[str, Any], what: str) -> NetrootError:
        if reply.get("busy"):
            return NetrootError(f"{self.target.name}: {reply['error']}", BUSY_HINT, Exit.BUSY)
        if "differences" in reply:
            return NetrootError(
                f"{self.target.name}: the tree sent differs from its manifest at "
                f"{reply['count']} paths: " + "; ".join(reply["differences"][:5]),
                "nothing was committed; run the export again (it is sent afresh)",
                Exit.CHECKS,
            )
        if "unrepairable" in reply:
            return NetrootError(
                f"{self.target.name}: {reply['error']}",
                "nothing was changed; export the image to a new version and roll it out",
                Exit.CHECKS,
            )
        return super().reply_error(reply, what)


def remote_target(server: NfsServer) -> SshTarget:
    # Who logs in (the inventory's ansible_user, else ~/.ssh/config's) decides about root.
    target = resolve(target_for(server.host))
    if not target.privileged_ok:
        raise UsageError(
            f"{server.name}: exporting needs root on the server (owners, device nodes), "
            f"and {target.user} logs in without become",
            "set ansible_become: true (passwordless sudo) or ansible_user: root",
        )
    return target


def mirror_root(server: NfsServer) -> Path:
    """Where this control host builds the versions it sends (a local export root)."""
    return cache_dir() / "export-mirror" / check_name(server.name)


class Push:
    """One server's side of a remote export: its helper session (holding the export's lock
    there), then either a no-op finish or the send of a locally built tree and its commit."""

    def __init__(self, server: NfsServer, name: str, vid: str) -> None:
        self.server, self.vid = server, vid
        self.target = remote_target(server)
        self.layout = Layout(Path(server.export_root), check_name(name))
        self.session = Session(self.target, server.export_root, name, vid)
        self.hello = self.session.hello

    @property
    def exists(self) -> bool:
        """The server has the version already (verified when it was committed)."""
        return bool(self.hello["exists"])

    def _result(self, manifest: Manifest, noop: bool, done: dict[str, Any], seconds: float,
                stats: dict[str, int]) -> RemoteResult:  # fmt: skip
        result = service.ExportResult(manifest, noop, done["switched"], done["pruned"], seconds)
        return RemoteResult(
            result,
            self.server.name,
            str(self.layout.version_dir(self.vid)),
            stats.get("total bytes sent", 0),
            stats.get("literal data", 0),
        )

    def finish(self, request: dict[str, Any], seconds: float) -> RemoteResult:
        """The version is there: switch and prune as asked (a no-op export)."""
        done = self.session.request({"op": "finish", **request})
        manifest = Manifest.from_json(self.hello["manifest"], entries=False)
        return self._result(manifest, True, done, seconds, {})

    def send(
        self, mirror: Layout, built: Manifest, request: dict[str, Any], started: float,
        progress: Progress | None = None,
    ) -> RemoteResult:  # fmt: skip
        """rsync the mirror's version into staging there, verify it there, commit it."""
        text = mirror.manifest_path(self.vid).read_bytes()
        suspects = self.session.request({"op": "collisions", "manifest_bytes": len(text)}, text)
        try:
            stats = _send(
                self.target, mirror.version_dir(self.vid), self.hello, suspects["paths"], progress
            )
        except NetrootError as exc:
            # A full disk frees what was staged; anything else (a dropped connection) keeps
            # it for the next run to resume.
            if exc.code == Exit.ENVIRONMENT and "no space" in exc.message:
                self.session.request({"op": "abort"})
            raise
        done = self.session.request({"op": "commit", **request})
        return self._result(built, False, done, time.monotonic() - started, stats)

    def close(self) -> None:
        self.session.close()


def export_remote(
    info: SourceInfo,
    apply: Callable[[Any], SourceRead],
    server: NfsServer,
    name: str,
    *,
    mirror: Path | None = None,
    **options: Unpack[service.ExportOptions],
) -> RemoteResult:
    """Build the version locally, send it to the server, verify and commit it there."""
    started = time.monotonic()
    keep_host_keys, progress = options.get("keep_host_keys", False), options.get("progress")
    vid = service.planned_version(info, keep_host_keys=keep_host_keys)
    request = {
        "switch": options.get("switch", True),
        "keep": options.get("keep"),
        "protected": sorted(options.get("protected") or ()),
    }
    push = Push(server, name, vid)
    try:
        if push.exists:
            return push.finish(request, time.monotonic() - started)
        local = mirror or mirror_root(server)
        built = service.export(
            info, apply, local, name, keep=1, keep_host_keys=keep_host_keys, progress=progress
        )
        return push.send(Layout(local, name), built.manifest, request, started, progress)
    finally:
        push.close()


def repair_remote(
    info: SourceInfo,
    apply: Callable[[Any], SourceRead],
    server: NfsServer,
    name: str,
    *,
    mirror: Path | None = None,
    **options: Unpack[service.ExportOptions],
) -> service.RepairResult:
    """Put a damaged version on the server back in place (netroot.remote.export_repair): the
    server names the damaged paths, this host builds the version in its mirror (from the
    source) and sends only those paths, the server checks and puts them back."""
    started = time.monotonic()
    keep_host_keys, progress = options.get("keep_host_keys", False), options.get("progress")
    vid = service.planned_version(info, keep_host_keys=keep_host_keys)
    target = remote_target(server)
    session = Session(target, server.export_root, check_name(name), vid, "--repair")
    try:
        hello = session.hello
        if not hello["damaged"]:
            summary = Manifest.from_json(hello["manifest"], entries=False)
            return service.RepairResult(summary, [], [], time.monotonic() - started)
        local = mirror or mirror_root(server)
        made = service.export(
            info, apply, local, name, keep=1, keep_host_keys=keep_host_keys, progress=progress
        )
        if made.noop and service.verify(local, name, vid)[1]:
            # The mirror's copy is the good copy sent: put it back first if it is damaged too.
            service.repair(info, apply, local, name, keep_host_keys=keep_host_keys)
        built = made.manifest
        tree = Layout(local, name).version_dir(vid)
        with tempfile.NamedTemporaryFile(prefix="netroot-repair-") as listing:
            # NUL-separated bytes (a name may hold a newline); "." is the version's root.
            listing.write(b"".join(os.fsencode(p or ".") + b"\0" for p in hello["send"]))
            listing.flush()
            flags = ["-aHAX", "--numeric-ids", "--sparse", "--stats", "--from0", EXACT_TIMES]
            what = f"sending the good copy of {len(hello['send'])} paths"
            adapter.rsync(
                target, [f"{tree}/"], f"{hello['staging']}/",
                [*flags, f"--files-from={listing.name}"], what,
            )  # fmt: skip
        done = session.request({"op": "repair"}, what="repairing")
        return service.RepairResult(
            built, done["done"], done["remaining"], time.monotonic() - started
        )
    finally:
        session.close()
