"""Export to an NFS server that is another machine: built here, sent with rsync, committed there.

When the inventory's NFS server has `netroot_export_remote: true`, its `netroot_export_root`
is a path on the server and this control host has none. An export then:

1. opens a helper session on the server over SSH with become (netroot.export.remote_helper,
   shipped first into the server's netroot lib dir): it takes the export name's lock there,
   cleans what killed runs left and says whether the version already exists (a no-op: nothing
   is built or sent);
2. builds the version in a local mirror export root (the local export, with every guard it
   has: hostile archive members are refused HERE, before anything leaves the machine, and the
   tree is verified against its manifest), hard-linking unchanged files from the mirror's
   previous version;
3. rsyncs the mirror's tree into the server's staging/VID (`-aHAX --numeric-ids --sparse`,
   `--link-dest` the server's current and newest versions: only changed files cross the wire,
   unchanged ones become hard links there); an interrupted transfer resumes into staging/VID;
4. sends the manifest to the session, which re-hashes the staged tree ON THE SERVER against it
   and only then renames it into versions/ with its manifest and switches `current`.

SSH as for every other netroot connection: the inventory's user, key, known_hosts checked
strictly (an unknown or changed host key is refused), BatchMode (never a prompt), become by
`sudo -n` (never a password prompt). Every child (ssh, rsync) dies with this process
(PR_SET_PDEATHSIG): a control host killed mid-transfer stops writing to the server at once.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import netroot
from netroot.errors import EnvironmentMissing, Exit, NetrootError, UsageError
from netroot.export import service
from netroot.export.manifest import Layout, Manifest, check_name
from netroot.export.sources import SourceInfo
from netroot.export.writer import Progress
from netroot.inventory import NfsServer
from netroot.paths import cache_dir
from netroot.sshtarget import SshTarget, target_for

LIB_DIR = "/usr/local/lib/netroot"  # the server role's netroot_nfs_server_lib_dir default
# What the helper imports: standard library plus these (checked by a unit test).
LIB_MODULES = (
    "__init__.py",
    "errors.py",
    "fsutil.py",
    "export/__init__.py",
    "export/fstree.py",
    "export/manifest.py",
    "export/members.py",
    "export/scan.py",
    "export/remote_helper.py",
)
RSYNC_FLAGS = ("-aHAX", "--numeric-ids", "--sparse", "--delete", "--stats", "--timeout=300")
PR_SET_PDEATHSIG = 1
# What ssh says when it cannot log in (rsync then exits 12 or 255, depending on timing).
SSH_FAILURES = (
    "Host key verification failed",
    "Permission denied (",
    "Connection refused",
    "Connection timed out",
    "No route to host",
    "Could not resolve hostname",
    "Connection closed by remote host",
)


@dataclass
class RemoteResult:
    result: service.ExportResult
    server: str
    path: str  # the version's directory on the server
    bytes_sent: int  # rsync's "Total bytes sent" (0 for a no-op)
    literal_bytes: int  # file data actually sent (the rest were links or matched blocks)


def _die_with_parent() -> None:
    # Runs in the child before exec: SIGKILL it when netroot dies (kill -9 included).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def ssh_argv(target: SshTarget) -> list[str]:
    """ssh to the server as the inventory says, host key checked strictly, never a prompt."""
    argv = ["ssh", "-p", str(target.port), "-l", target.user]
    if target.key_file:
        argv += ["-i", target.key_file, "-o", "IdentitiesOnly=yes"]
    for option in (
        f"UserKnownHostsFile={target.known_hosts}",
        "StrictHostKeyChecking=yes",
        "BatchMode=yes",
        "ConnectTimeout=15",
        "ServerAliveInterval=15",
        "ServerAliveCountMax=4",
        "LogLevel=ERROR",
    ):
        argv += ["-o", option]
    return argv


def _spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(argv, preexec_fn=_die_with_parent, **kwargs)
    except FileNotFoundError:
        raise EnvironmentMissing(
            f"{argv[0]}: not installed on this control host",
            "install openssh-client and rsync (apt-get install openssh-client rsync)",
        ) from None


def _ssh_failure(target: SshTarget, what: str, rc: int, stderr: str) -> NetrootError:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    # rsync ends with its own summary ("rsync error: ... (code 255)"): ssh's reason is before.
    own = [line for line in lines if not line.startswith(("rsync error", "rsync: "))]
    last = (own or lines or [f"exit {rc}"])[-1]
    if "password is required" in stderr or "a terminal is required" in stderr:
        return UsageError(
            f"{target.name}: sudo -n asks {target.user} for a password ({what})",
            "give the user passwordless sudo on the server (NOPASSWD), or log in as root",
        )
    if "No space left on device" in stderr:
        return NetrootError(
            f"{target.name}: no space left on the server's export root ({what})",
            "free space there or prune old versions; current is unchanged",
            Exit.ENVIRONMENT,
        )
    if rc == 255 or any(marker in stderr for marker in SSH_FAILURES):
        return NetrootError(
            f"{target.name}: ssh {target.user}@{target.host}:{target.port} failed: {last}",
            "check the server's address, key and known_hosts in the inventory",
            Exit.UNREACHABLE,
        )
    if (
        rc == 127
        or "command not found" in stderr
        or "No such file or directory" in last
        or "Unknown option: -P" in stderr  # python3 older than 3.11
    ):
        return EnvironmentMissing(
            f"{target.name}: {what}: {last}",
            "the server needs rsync and python3 >= 3.11 (apt-get install rsync python3)",
        )
    return NetrootError(f"{target.name}: {what} failed: {last}", "current is unchanged")


def _remote_dest(target: SshTarget, path: str) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    return f"{target.user}@{host}:{path}"


def _rsync(
    target: SshTarget,
    sources: list[str],
    dest: str,
    extra: list[str],
    what: str,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Run rsync to the server as root there; its --stats numbers."""
    rsync_path = f"sudo -n -u {shlex.quote(target.become_user)} rsync" if target.sudo else "rsync"
    argv = [
        "rsync",
        *extra,
        *(["--info=progress2"] if progress is not None else []),
        "-e",
        shlex.join(ssh_argv(target)),
        f"--rsync-path={rsync_path}",
        *sources,
        _remote_dest(target, dest),
    ]
    # stderr to a file: a pipe nobody reads while stdout is followed could fill and block.
    with tempfile.TemporaryFile() as err:
        proc = _spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        out = _follow(lambda: os.read(fd, 65536), progress)
        rc = proc.wait()
        err.seek(0)
        if rc != 0:
            raise _ssh_failure(target, what, rc, err.read().decode(errors="replace"))
    return parse_stats(out)


def _follow(read: Callable[[], bytes], progress: Progress | None) -> str:
    """rsync's output; its --info=progress2 lines ("1,234  5%  ... (xfr#3, ...)") reported."""
    seen: list[bytes] = []
    pending = b""
    while chunk := read():
        seen.append(chunk)
        if progress is None:
            continue
        *lines, pending = re.split(rb"[\r\n]", pending + chunk)
        for line in reversed(lines):  # the newest complete progress line is enough
            m = re.match(rb"\s*([\d,]+)\s+\d+%", line)
            if m:
                files = re.search(rb"xfr#(\d+)", line)
                progress(int(m.group(1).replace(b",", b"")), int(files.group(1)) if files else 0)
                break
    return b"".join(seen).decode(errors="replace")


def parse_stats(text: str) -> dict[str, int]:
    """rsync --stats lines ("Total bytes sent: 1,234") as {"total bytes sent": 1234}."""
    stats: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z][A-Za-z ()-]*?):\s+([\d,.]+)", line.strip())
        if m:
            number = m.group(2).replace(",", "").split(".")[0]
            if number.isdigit():
                stats[m.group(1).lower()] = int(number)
    return stats


def lib_dir(server: NfsServer) -> str:
    return str(server.host.vars.get("netroot_nfs_server_lib_dir", LIB_DIR))


def ship_helper(target: SshTarget, dest: str) -> None:
    """Copy the helper and the modules it imports to the server (unchanged files skipped)."""
    package = Path(netroot.__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="netroot-lib-") as tmp:
        for rel in LIB_MODULES:
            out = Path(tmp) / "netroot" / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes((package / rel).read_bytes())
        flags = ["-rt", "--checksum", "--chmod=D755,F644", "--mkpath"]
        _rsync(target, [f"{tmp}/netroot"], f"{dest}/", flags, "installing the export helper")


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
    stats = _rsync(target, [f"{tree}/"], dest, [*RSYNC_FLAGS, *links], what, progress)
    if suspects:
        with tempfile.NamedTemporaryFile(prefix="netroot-suspects-") as listing:
            # NUL-separated, as bytes: a name may hold a newline or bytes that are not UTF-8.
            listing.write(b"".join(os.fsencode(path) + b"\0" for path in suspects))
            listing.flush()
            flags = ["-aHAX", "--numeric-ids", "--sparse", "--checksum", "--stats", "--from0"]
            again = _rsync(
                target, [f"{tree}/"], dest, [*flags, f"--files-from={listing.name}"], what
            )
        for key in ("total bytes sent", "literal data"):
            stats[key] = stats.get(key, 0) + again.get(key, 0)
    return stats


def verify_remote(server: NfsServer, name: str, vid: str | None) -> dict[str, Any]:
    """Re-hash a version on the server against its manifest there (reads only)."""
    target = remote_target(server)
    lib = lib_dir(server)
    ship_helper(target, lib)
    command = (
        f"cd / && PYTHONPATH={shlex.quote(lib)} exec python3 -P -s -m "
        "netroot.export.remote_helper --verify "
        + shlex.join([server.export_root, check_name(name), vid or ""])
    )
    proc = _spawn(
        [*ssh_argv(target), target.host, target.privileged(command)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate()
    line = out.decode(errors="replace").strip()
    if not line:
        raise _ssh_failure(target, "verifying", proc.returncode, err.decode(errors="replace"))
    reply: dict[str, Any] = json.loads(line.splitlines()[-1])
    if not reply.get("ok"):
        raise UsageError(f"{server.name}: {reply.get('error')}", f"see the server's {name}")
    return reply


class Session:
    """The helper session on the server: holds the export's lock there while it is open."""

    def __init__(self, target: SshTarget, lib: str, root: str, name: str, vid: str) -> None:
        self.target = target
        # As root: -P and `cd /` keep the login's directory off sys.path (nothing there can
        # shadow the shipped modules), -s leaves out root's user site-packages.
        command = (
            f"cd / && PYTHONPATH={shlex.quote(lib)} exec python3 -P -s -m "
            "netroot.export.remote_helper " + shlex.join([root, name, vid])
        )
        self.proc = _spawn(
            [*ssh_argv(target), target.host, target.privileged(command)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.hello = self._read("starting the export helper")

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def _read(self, what: str) -> dict[str, Any]:
        line = self._pipes()[1].readline()
        if not line:
            rc = self.proc.wait()
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise _ssh_failure(self.target, what, rc, err)
        reply: dict[str, Any] = json.loads(line)
        if reply.get("ok"):
            return reply
        if reply.get("busy"):
            raise NetrootError(
                f"{self.target.name}: {reply['error']}", "wait for it to finish", Exit.BUSY
            )
        if "differences" in reply:
            raise NetrootError(
                f"{self.target.name}: the tree sent differs from its manifest at "
                f"{reply['count']} paths: " + "; ".join(reply["differences"][:5]),
                "nothing was committed; run the export again (it is sent afresh)",
                Exit.CHECKS,
            )
        if reply.get("errno") == 28:
            raise _ssh_failure(self.target, what, 1, "No space left on device")
        raise NetrootError(f"{self.target.name}: {what}: {reply.get('error')}")

    def request(self, request: dict[str, Any], payload: bytes = b"") -> dict[str, Any]:
        stdin, _ = self._pipes()
        try:
            stdin.write(json.dumps(request).encode() + b"\n" + payload)
            stdin.flush()
        except BrokenPipeError:
            pass  # the helper died: _read reports why
        return self._read("committing the version on the server")

    def close(self) -> None:
        if self.proc.poll() is None:
            self._pipes()[0].close()  # EOF: the helper exits, the lock is released
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def remote_target(server: NfsServer) -> SshTarget:
    target = target_for(server.host)
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


def export_remote(
    info: SourceInfo,
    apply: Callable[[Any], None],
    server: NfsServer,
    name: str,
    *,
    keep: int | None = None,
    keep_host_keys: bool = False,
    protected: set[str] | None = None,
    progress: Progress | None = None,
    switch: bool = True,
    mirror: Path | None = None,
) -> RemoteResult:
    """Build the version locally, send it to the server, verify and commit it there."""
    started = time.monotonic()
    target = remote_target(server)
    vid = service.planned_version(info, keep_host_keys=keep_host_keys)
    lib = lib_dir(server)
    ship_helper(target, lib)
    layout = Layout(Path(server.export_root), check_name(name))
    request = {"switch": switch, "keep": keep, "protected": sorted(protected or ())}
    session = Session(target, lib, server.export_root, name, vid)
    try:
        hello = session.hello
        if hello["exists"]:
            done = session.request({"op": "finish", **request})
            manifest = Manifest.from_json(hello["manifest"], entries=False)
            seconds = time.monotonic() - started
            result = service.ExportResult(manifest, True, done["switched"], done["pruned"], seconds)
            return RemoteResult(result, server.name, str(layout.version_dir(vid)), 0, 0)
        local = mirror or mirror_root(server)
        built = service.export(
            info, apply, local, name, keep=1, keep_host_keys=keep_host_keys, progress=progress
        )
        mine = Layout(local, name)
        text = mine.manifest_path(vid).read_bytes()
        suspects = session.request({"op": "collisions", "manifest_bytes": len(text)}, text)
        try:
            stats = _send(target, mine.version_dir(vid), hello, suspects["paths"], progress)
        except NetrootError as exc:
            # A full disk frees what was staged; anything else (a dropped connection) keeps
            # it for the next run to resume.
            if exc.code == Exit.ENVIRONMENT and "no space" in exc.message:
                session.request({"op": "abort"})
            raise
        done = session.request({"op": "commit", **request})
    finally:
        session.close()
    seconds = time.monotonic() - started
    result = service.ExportResult(built.manifest, False, done["switched"], done["pruned"], seconds)
    return RemoteResult(
        result,
        server.name,
        str(layout.version_dir(vid)),
        stats.get("total bytes sent", 0),
        stats.get("literal data", 0),
    )
