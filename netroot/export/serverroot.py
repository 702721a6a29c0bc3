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

`ServerRoot` is such a server as a place (netroot.export.place): `versions`, `prune` and
`verify` ask the same helper one question each (--list, --prune, --verify), `repair` a
session of its own (--repair). SSH, rsync and the session go through netroot.adapters.serverssh
(the inventory's user and key, known_hosts checked strictly, `sudo -n`, children that die with
this process).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netroot.adapters import serverssh as adapter
from netroot.adapters.ssh import resolve
from netroot.adapters.sshproc import call
from netroot.bundle import helper_command
from netroot.errors import Exit, NetrootError, UsageError
from netroot.export import verbs
from netroot.export.manifest import BUSY_HINT, Layout, Manifest, check_name
from netroot.export.place import Checked, Exported, Fan, Listing, Protection, Pruned, Repaired
from netroot.export.request import ExportOptions, Source
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
    """One request to the export helper on the server (--verify, --list, --prune). No time
    bound: --verify re-hashes a whole version there (minutes for a large tree); a Ctrl-C and
    netroot's death end it."""
    target = remote_target(server)
    command = target.privileged(helper_command("netroot.remote.export", args))
    rc, out, err = call([*adapter.ssh_argv(target), target.host, command], dies_with_netroot=True)
    line = out.decode(errors="replace").strip()
    if not line:
        raise adapter.ssh_failure(target, what, rc, err.decode(errors="replace"))
    reply: dict[str, Any] = json.loads(line.splitlines()[-1])
    if reply.get("busy"):
        raise NetrootError(f"{server.name}: {reply['error']}", BUSY_HINT, Exit.BUSY)
    if not reply.get("ok"):
        raise UsageError(
            f"{server.name}: {reply.get('error')}", f"see `netroot versions` on {server.name}"
        )
    return reply


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
                stats: dict[str, int]) -> Exported:  # fmt: skip
        result = verbs.ExportResult(manifest, noop, done["switched"], done["pruned"], seconds)
        path = str(self.layout.version_dir(self.vid))
        sent = stats.get("total bytes sent", 0)  # rsync's figure (0 for a no-op)
        return Exported(result, self.layout.name, path, self.server.name, sent)

    def finish(self, request: dict[str, Any], seconds: float) -> Exported:
        """The version is there: switch and prune as asked (a no-op export)."""
        done = self.session.request({"op": "finish", **request})
        manifest = Manifest.from_json(self.hello["manifest"], entries=False)
        return self._result(manifest, True, done, seconds, {})

    def send(
        self, mirror: Layout, built: Manifest, request: dict[str, Any], started: float,
        progress: Progress | None = None,
    ) -> Exported:  # fmt: skip
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


class ServerRoot:
    """One NFS server's export root, reached over SSH (its netroot_export_remote)."""

    def __init__(self, server: NfsServer, mirror: Path | None = None) -> None:
        """mirror: where this host builds what it sends (default: its cache's, per server)."""
        self.server = server
        self._mirror = mirror

    @property
    def where(self) -> str:
        return f"{self.server.name}:{self.server.export_root}"

    @property
    def label(self) -> str:
        return self.server.name

    @property
    def mirror(self) -> Path:
        return self._mirror or mirror_root(self.server)

    def export(self, source: Source, name: str, options: ExportOptions) -> Exported:
        """Build the version here (in the mirror), send it, verify and commit it there."""
        started = time.monotonic()
        vid = verbs.planned_version(source.info, keep_host_keys=options.keep_host_keys)
        push = Push(self.server, name, vid)
        try:
            if push.exists:
                return push.finish(options.request, time.monotonic() - started)
            built = self._build(source, name, options)
            return push.send(
                Layout(self.mirror, name), built, options.request, started, options.progress
            )
        finally:
            push.close()

    def _build(self, source: Source, name: str, options: ExportOptions) -> Manifest:
        """The version in this host's mirror (pruned to it: the mirror keeps one)."""
        mirrored = ExportOptions(keep=1, keep_host_keys=options.keep_host_keys,
                                 progress=options.progress)  # fmt: skip
        return verbs.export(source, self.mirror, name, mirrored).manifest

    def export_here(self, source: Source, name: str, options: ExportOptions) -> ServerRoot:
        return self  # nothing here: the tree is received in the second step

    def receive(self, name: str, vid: str, options: ExportOptions, fan: Fan) -> Exported:
        """One server of several: say whether it needs the version, then finish or receive."""
        try:
            push = Push(self.server, name, vid)
        except BaseException:
            fan.needs(False)
            raise
        try:
            fan.needs(not push.exists)
            if push.exists:
                return push.finish(options.request, time.monotonic() - fan.started)
            tree = fan.built()
            assert tree is not None  # this server needed it, so it was built (or raised)
            return push.send(
                Layout(tree[0], name), tree[1], options.request, fan.started, fan.progress
            )
        finally:
            push.close()

    def repair(self, source: Source, name: str, options: ExportOptions) -> Repaired:
        return Repaired(name, self.label, repair_remote(self, source, name, options))

    def _once(self, args: list[str], what: str) -> dict[str, Any]:
        return _once(self.server, [args[0], self.server.export_root, *args[1:]], what)

    def versions(self, name: str) -> Listing:
        """`current` and the committed versions of NAME there, oldest first (reads only)."""
        reply = self._once(["--list", check_name(name)], "listing versions")
        found = [Manifest.from_json(text, entries=False) for text in reply["versions"]]
        return Listing(name, self.where, reply["current"], found)

    def verify(self, name: str, vid: str | None, root: Path | None = None) -> Checked:
        """Re-hash a version there against its manifest there (reads only)."""
        r = self._once(["--verify", check_name(name), vid or ""], "verifying")
        return Checked(
            name, r["version"], r["files"], r["tree_hash"], r["differences"], r["source"],
            r["repo_tags"], r["image_id"], root,
        )  # fmt: skip

    def prune(self, name: str, keep: int, protection: Protection, *, dry_run: bool) -> Pruned:
        """Prune there (under the export's lock there), or with `dry_run` only plan it (no
        lock, nothing written): what goes and why each other version stays."""
        why = json.dumps(verbs.reasons(protection), sort_keys=True)
        args = ["--prune", check_name(name), str(keep), "1" if dry_run else "0", why]
        plan = self._once(args, "pruning")["plan"]
        found = PrunePlan(list(plan["remove"]), dict(plan["kept"]), list(plan["order"]))
        return Pruned(name, self.label, found, dry_run)

    def interrupted(self, name: str) -> Callable[[], str]:
        """The server commits only a tree wholly sent and verified, and this host cannot ask
        it once its SSH session died with the Ctrl-C."""
        return lambda: (
            "interrupted: the server commits a version only once it is wholly sent and "
            f"verified; `netroot versions {name}` shows whether it was"
        )


def repair_remote(
    root: ServerRoot, source: Source, name: str, options: ExportOptions
) -> verbs.RepairResult:
    """Put a damaged version on the server back in place (netroot.remote.export_repair): the
    server names the damaged paths, this host builds the version in its mirror (from the
    source) and sends only those paths, the server checks and puts them back."""
    started = time.monotonic()
    server, local = root.server, root.mirror
    vid = verbs.planned_version(source.info, keep_host_keys=options.keep_host_keys)
    target = remote_target(server)
    session = Session(target, server.export_root, check_name(name), vid, "--repair")
    try:
        hello = session.hello
        if not hello["damaged"]:
            summary = Manifest.from_json(hello["manifest"], entries=False)
            return verbs.RepairResult(summary, [], [], time.monotonic() - started)
        mirrored = ExportOptions(keep=1, keep_host_keys=options.keep_host_keys,
                                 progress=options.progress)  # fmt: skip
        made = verbs.export(source, local, name, mirrored)
        if made.noop and verbs.verify(local, name, vid)[1]:
            # The mirror's copy is the good copy sent: put it back first if it is damaged too.
            verbs.repair(source, local, name, ExportOptions(keep_host_keys=options.keep_host_keys))
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
        return verbs.RepairResult(
            made.manifest, done["done"], done["remaining"], time.monotonic() - started
        )
    finally:
        session.close()
