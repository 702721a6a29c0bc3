"""One export to several NFS servers: each server gets the version with every guarantee its
own export has, and a server that fails is a result, not the end of the others.

A lab that outgrows one server lists several; an export (and a rollout's export) goes to every
server that serves a targeted board:

- a remote export root (netroot_export_remote): the version is built ONCE on this control host
  (the first such server's mirror, netroot.export.remote), then each server's own helper
  session receives it by rsync into its staging, re-hashes it there against the manifest and
  commits it, all servers at once (one thread each: every server's link is its own). A server
  that has it already is a no-op there;
- a local export root (netroot runs on the server, or mounts its root): the local export,
  once per distinct path (two servers that share one root share its versions).

A version is on the fleet only where it was verified: `Fanout.done` names the servers that
hold it, `Fanout.failed` the ones that do not, and why (unreachable, full disk, ...). The next
export of the same source finishes the job: a no-op where it is, a transfer where it is not.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netroot.errors import Exit, NetrootError, worst
from netroot.export import service
from netroot.export.manifest import Layout, Manifest
from netroot.export.sources import SourceInfo
from netroot.export.writer import Progress
from netroot.inventory import NfsServer


@dataclass
class Fanout:
    """What one export left on each server."""

    version: str
    done: dict[str, service.ExportResult] = field(default_factory=dict)  # server -> result
    failed: dict[str, NetrootError] = field(default_factory=dict)  # server -> why not
    bytes_sent: dict[str, int] = field(default_factory=dict)  # remote servers: rsync's figure

    @property
    def manifest(self) -> Manifest:
        """The version's manifest (from any server that holds it)."""
        if not self.done:
            raise self.error()
        return next(iter(self.done.values())).manifest

    def error(self) -> NetrootError:
        """One error naming every server that lacks the version, with the worst exit code
        (the server's own error, as a one-server export raises it, when it is the only one)."""
        if len(self.failed) == 1 and not self.done:
            return next(iter(self.failed.values()))
        reasons = "; ".join(f"{n}: {e.message}" for n, e in self.failed.items())
        done = f"; it is on {', '.join(self.done)}" if self.done else ""
        return NetrootError(
            f"version {self.version} is not on {', '.join(self.failed)} ({reasons}){done}",
            "fix those servers and export again: the servers that have it are left as they are",
            exit_code(self.failed.values()),
        )


def exit_code(errors: Iterable[NetrootError]) -> Exit:
    """The code of several servers' failures: theirs when they agree, else the worst."""
    codes = {e.code for e in errors}
    if len(codes) == 1:
        return codes.pop()
    code = worst(codes)
    return code if code != Exit.OK else Exit.FAILED


@dataclass(frozen=True)
class Options:
    """The export's options, the same on every server."""

    switch: bool = True
    keep: int | None = None
    keep_host_keys: bool = False
    protected: frozenset[str] = frozenset()
    progress: Progress | None = None

    @property
    def request(self) -> dict[str, Any]:
        return {"switch": self.switch, "keep": self.keep, "protected": sorted(self.protected)}


def export_all(
    servers: Sequence[NfsServer],
    info: SourceInfo,
    apply: Callable[[Any], Any],
    name: str,
    options: Options = Options(),
    mirror: Path | None = None,
) -> Fanout:
    """Export to every server; each one's outcome in the result (never raises for one)."""
    vid = service.planned_version(info, keep_host_keys=options.keep_host_keys)
    out = Fanout(vid)
    _local(servers, info, apply, name, options, out)
    remote = [s for s in servers if s.remote]
    if remote:
        _remote(remote, info, apply, name, options, mirror, out)
    return out


def _local(
    servers: Sequence[NfsServer], info: SourceInfo, apply: Callable[[Any], Any], name: str,
    options: Options, out: Fanout,
) -> None:  # fmt: skip
    by_path: dict[Path, str] = {}
    for server in (s for s in servers if not s.remote):
        path = Path(server.export_root)
        if path in by_path:  # the same root: the same versions
            first = by_path[path]
            if first in out.done:
                out.done[server.name] = out.done[first]
            else:
                out.failed[server.name] = out.failed[first]
            continue
        by_path[path] = server.name
        try:
            out.done[server.name] = service.export(
                info, apply, path, name, keep=options.keep, keep_host_keys=options.keep_host_keys,
                protected=set(options.protected), progress=options.progress,
                switch=options.switch,
            )  # fmt: skip
        except NetrootError as exc:
            out.failed[server.name] = exc


def _remote(
    servers: Sequence[NfsServer], info: SourceInfo, apply: Callable[[Any], Any], name: str,
    options: Options, mirror: Path | None, out: Fanout,
) -> None:  # fmt: skip
    """Every server in its own thread; the tree built once, here, when any server needs it.

    A worker owns its ssh children from start to end: they die with the thread that started
    them (PR_SET_PDEATHSIG), so a session never crosses threads.
    """
    from netroot.export.remote import mirror_root

    started = time.monotonic()
    told: queue.Queue[tuple[str, bool]] = queue.Queue()  # (server, needs the version)
    built: Future[tuple[Layout, Manifest] | None] = Future()
    several = len(servers) > 1
    with ThreadPoolExecutor(len(servers), thread_name_prefix="netroot-push") as pool:
        jobs = {
            s.name: pool.submit(_push, s, name, out.version, options, told, built, started,
                                None if several else options.progress)
            for s in servers
        }  # fmt: skip
        try:
            needs = [told.get() for _ in servers]
            if any(wanted for _, wanted in needs):
                local = mirror or mirror_root(servers[0])
                made = service.export(
                    info, apply, local, name, keep=1, keep_host_keys=options.keep_host_keys,
                    progress=options.progress,
                )  # fmt: skip
                built.set_result((Layout(local, name), made.manifest))
            else:
                built.set_result(None)
        except BaseException as exc:  # Ctrl-C included: no worker may wait for ever
            if not built.done():
                built.set_exception(exc)  # every waiting worker closes its session and fails
            raise
        finally:
            for server_name, job in jobs.items():
                try:
                    result = job.result()
                except NetrootError as exc:
                    out.failed[server_name] = exc
                    continue
                out.done[server_name] = result.result
                out.bytes_sent[server_name] = result.bytes_sent


def _push(
    server: NfsServer, name: str, vid: str, options: Options,
    told: queue.Queue[tuple[str, bool]], built: Future[tuple[Layout, Manifest] | None],
    started: float, progress: Progress | None,
) -> Any:  # fmt: skip
    """One server: say whether it needs the version, then finish or receive it."""
    from netroot.export.remote import Push

    try:
        push = Push(server, name, vid)
    except BaseException:
        told.put((server.name, False))
        raise
    try:
        told.put((server.name, not push.exists))
        if push.exists:
            return push.finish(options.request, time.monotonic() - started)
        tree = built.result()
        assert tree is not None  # this server needed it, so it was built (or raised)
        return push.send(tree[0], tree[1], options.request, started, progress)
    finally:
        push.close()
