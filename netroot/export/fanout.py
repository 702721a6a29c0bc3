"""One export to several NFS servers: each server gets the version with every guarantee its
own export has, and a server that fails is a result, not the end of the others.

A lab that outgrows one server lists several; an export (and a rollout's export) goes to every
server that serves a targeted board:

- a remote export root (netroot_export_remote): the version is built ONCE on this control host
  (the first such server's mirror, netroot.export.serverroot), then each server's own helper
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
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from netroot.errors import Exit, NetrootError, worst
from netroot.export import verbs
from netroot.export.manifest import Manifest
from netroot.export.place import Exported, Fan, Receiver, Root
from netroot.export.request import ExportOptions, Source


@dataclass
class Fanout:
    """What one export left on each server."""

    version: str
    done: dict[str, verbs.ExportResult] = field(default_factory=dict)  # server -> result
    failed: dict[str, NetrootError] = field(default_factory=dict)  # server -> why not
    bytes_sent: dict[str, int | None] = field(default_factory=dict)  # rsync's (None: no wire)
    paths: dict[str, str] = field(default_factory=dict)  # server -> the version's directory

    def add(self, server: str, done: Exported) -> None:
        self.done[server] = done.result
        self.paths[server] = done.path
        self.bytes_sent[server] = done.bytes_sent

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


def export_all(
    roots: Mapping[str, Root], source: Source, name: str, options: ExportOptions = ExportOptions()
) -> Fanout:
    """Export to every root (by server name); each one's outcome in the result (never raises
    for one). Roots on this host export first, in turn (two servers that share one root share
    its versions); the others receive at once, the tree built once here."""
    vid = verbs.planned_version(source.info, keep_host_keys=options.keep_host_keys)
    out = Fanout(vid)
    first: dict[str, str] = {}  # where -> the first server of that root
    waiting: dict[str, Receiver] = {}
    for server, root in roots.items():
        same = first.setdefault(root.where, server)
        if same in out.done or same in out.failed:  # the same root: the same versions
            out.done.update({server: out.done[same]} if same in out.done else {})
            out.failed.update({server: out.failed[same]} if same in out.failed else {})
            out.paths[server] = out.paths.get(same, "")
            continue
        try:
            here = root.export_here(source, name, options)
        except NetrootError as exc:
            out.failed[server] = exc
            continue
        if isinstance(here, Exported):
            out.add(server, here)
        else:
            waiting[server] = here
    if waiting:
        _receive(waiting, source, name, options, out)
    return out


def _receive(
    roots: Mapping[str, Receiver], source: Source, name: str, options: ExportOptions, out: Fanout
) -> None:
    """Every root in its own thread; the tree built once, here, when any root needs it.

    A worker owns its ssh children from start to end: they die with the thread that started
    them (PR_SET_PDEATHSIG), so a session never crosses threads.
    """
    told: queue.Queue[bool] = queue.Queue()  # one answer a root: it needs the version
    built: Future[tuple[Path, Manifest] | None] = Future()
    # One bar for one root; several at once would fight over it.
    progress = options.progress if len(roots) == 1 else None
    fan = Fan(told.put, built.result, time.monotonic(), progress)
    with ThreadPoolExecutor(len(roots), thread_name_prefix="netroot-push") as pool:
        jobs = {
            s: pool.submit(r.receive, name, out.version, options, fan) for s, r in roots.items()
        }
        try:
            if any([told.get() for _ in roots]):
                local = next(iter(roots.values())).mirror
                mirrored = ExportOptions(keep=1, keep_host_keys=options.keep_host_keys,
                                         progress=options.progress)  # fmt: skip
                made = verbs.export(source, local, name, mirrored)
                built.set_result((local, made.manifest))
            else:
                built.set_result(None)
        except BaseException as exc:  # Ctrl-C included: no worker may wait for ever
            if not built.done():
                built.set_exception(exc)  # every waiting worker closes its session and fails
            raise
        finally:
            for server, job in jobs.items():
                try:
                    out.add(server, job.result())
                except NetrootError as exc:
                    out.failed[server] = exc
