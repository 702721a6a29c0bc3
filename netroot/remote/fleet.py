"""The fleet state and the writer's lock of a remote export root, kept ON the server.

When the export root is on the NFS server (netroot_export_remote), every control host reaches
the fleet through this helper, run over SSH with become by netroot.fleet.where, sent as source
in the command line (netroot.bundle.helper_command: nothing is installed on the server), as if
it were

    python3 -m netroot.remote.fleet ROOT CLIENT

CLIENT names the control host and its netroot process ("ctl-a pid 1234"). One session per
netroot command, speaking JSON lines on stdin/stdout, lives as long as that command's ssh.

The lock is the same lock file (netroot.remote.lock) that netroot running on the server itself
takes, held by this helper process: its holder is this process on the server, its command says
which control host asked. So a second writer, from any control host or the server, is refused
naming the holder (exit 6); and when the control host dies (kill -9, a dropped network), ssh
closes our stdin and the lock is released; a holder silent for IDLE seconds (its network gone,
its TCP connection not closed) loses it too; and if this process is killed, its pid is gone
on the server and the next writer takes the lock over, as a dead local holder's is. The state
file is replaced atomically and fsynced (fsutil.atomic_write), only by the session holding the
lock. Reads never lock.
"""

from __future__ import annotations

import json
import os
import select
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from netroot.errors import NetrootError
from netroot.fsutil import append_lines, atomic_write, read_log_from
from netroot.remote import lock

STATE_NAME = ".netroot-fleet.json"
# The event log beside it (netroot.fleet.events, which this stdlib-only helper cannot import).
EVENTS_NAME = ".netroot-events.jsonl"
EVENTS_MAX_BYTES = 4 << 20
PING = 20.0  # seconds between a lock holder's pings
IDLE = 120.0  # a lock holder silent this long is gone: its lock is released
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _reply(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def _safe(name: object) -> str:
    """An export name or version id: one path component, nothing that climbs out of ROOT."""
    text = str(name)
    if not text or text.startswith(".") or not set(text) <= NAME_CHARS:
        raise ValueError(f"bad name {text!r}")
    return text


class FleetSession:
    """One control host's session: what it reads, and the lock while it holds it."""

    def __init__(self, root: Path, client: str) -> None:
        self.root = root
        self.client = client
        self.held: lock.Holder | None = None

    def _current(self, name: str) -> str | None:
        try:
            return Path(os.readlink(self.root / _safe(name) / "current")).name
        except OSError:
            return None

    def _has(self, name: str, vid: str) -> bool:
        base = self.root / _safe(name) / "versions"
        return (base / f"{_safe(vid)}.json").is_file() and (base / vid).is_dir()

    def _need_lock(self, op: str) -> None:
        if self.held is None:
            raise ValueError(f"{op} without the writer's lock")

    def handle(self, request: dict[str, Any], payload: bytes) -> dict[str, Any]:
        op = request.get("op")
        if op == "read":
            try:
                return {"state": (self.root / STATE_NAME).read_text()}
            except FileNotFoundError:
                return {"state": None}
        if op == "current":
            return {"current": self._current(request["name"])}
        if op == "has":
            return {"has": {v: self._has(request["name"], v) for v in request["versions"]}}
        if op == "refuse":
            lock.refuse_if_held(self.root, break_lock=bool(request.get("break_lock")))
            return {}
        if op == "lock":
            if self.held is not None:
                raise ValueError("the lock is already held by this session")
            command = f"{request['command']} (from {self.client})"
            self.held = lock.acquire(self.root, command, break_lock=bool(request.get("break_lock")))
            return {"holder": asdict(self.held)}
        if op == "ping":
            return {}
        if op == "unlock":
            self._release()
            return {}
        if op == "save":
            self._need_lock(op)
            json.loads(payload)  # a torn or foreign payload never replaces the state
            # The events first: a crash between the two leaves an event the rerun logs again,
            # never a change without its event (netroot.fleet.events).
            self._log(request.get("events") or [])
            atomic_write(self.root / STATE_NAME, payload, mode=0o600)
            return {}
        if op == "events":
            self._need_lock(op)
            self._log(request.get("events") or [])
            return {}
        if op == "read_events":
            after = request.get("after")
            cursor = (int(after[0]), int(after[1]), int(after[2])) if after else None
            text, at = read_log_from(self.root / EVENTS_NAME, cursor)
            return {"events": text, "cursor": list(at)}
        if op == "switch":
            self._need_lock(op)
            name, vid = _safe(request["name"]), _safe(request["version"])
            if not self._has(name, vid):
                raise ValueError(f"no version {vid} of {name}")
            # Only here: the export helper's modules are loaded by a session that switches.
            from netroot.export.manifest import Layout, switch_current

            return {"switched": switch_current(Layout(self.root, name), vid)}
        raise ValueError(f"unknown op {op!r}")

    def _log(self, lines: object) -> None:
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise ValueError("events must be a list of JSON lines")
        append_lines(self.root / EVENTS_NAME, [line for line in lines if "\n" not in line],
                     max_bytes=EVENTS_MAX_BYTES)  # fmt: skip

    def _release(self) -> None:
        if self.held is not None:
            lock.release(self.root, self.held)
            self.held = None


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, lock.LockHeld):
        holder = asdict(exc.holder)
        return {"ok": False, "busy": True, "holder": holder, "error": exc.message, "hint": exc.hint}
    if isinstance(exc, NetrootError):
        return {"ok": False, "error": exc.message, "hint": exc.hint, "code": int(exc.code)}
    if isinstance(exc, OSError):
        return {"ok": False, "error": f"{exc.strerror}: {exc.filename}", "errno": exc.errno}
    return {"ok": False, "error": f"bad request ({exc})"}


class _Input:
    """stdin as lines and counted bytes, with a deadline while the lock is held."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf = fd, b""

    def _fill(self, timeout: float | None) -> bool:
        """More bytes (False: EOF); TimeoutError when nothing came for `timeout` seconds."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            raise TimeoutError
        chunk = os.read(self.fd, 65536)
        self.buf += chunk
        return bool(chunk)

    def line(self, timeout: float | None) -> bytes:
        while b"\n" not in self.buf:
            if not self._fill(timeout):
                return b""
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def read(self, count: int) -> bytes:
        while len(self.buf) < count and self._fill(None):
            pass
        data, self.buf = self.buf[:count], self.buf[count:]
        return data


def serve(root: Path, client: str, idle: float = IDLE) -> int:
    """Answer one control host until it goes away; then release what it held.

    While it holds the lock, the control host pings (netroot.fleet.where) every PING
    seconds: silence for `idle` seconds means it is gone although its TCP connection is not
    closed (a control host whose network vanished), and the lock is released.
    """
    if not root.is_absolute() or ".." in root.parts:
        _reply({"ok": False, "error": f"bad root {str(root)!r}"})
        return 2
    fleet = FleetSession(root, client)
    stdin = _Input(sys.stdin.fileno())
    _reply({"ok": True, "host": lock.this_host()})
    try:
        while True:
            try:
                line = stdin.line(idle if fleet.held is not None else None)
            except TimeoutError:
                fleet._release()
                # What the holder reads if it ever asks again (it was only slow, or paused).
                _reply({"ok": False, "error": f"no word from {client} for {idle:.0f} s: "
                        "the writer's lock was released"})  # fmt: skip
                return 1
            if not line.strip():
                return 0  # the control host went away (or closed the session, or fell silent)
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("a request is a JSON object")
                payload = stdin.read(int(request.get("bytes", 0)))
                _reply({"ok": True, **fleet.handle(request, payload)})
            except (NetrootError, OSError, ValueError, KeyError, TypeError) as exc:
                _reply(_error(exc))
    finally:
        fleet._release()  # EOF, silence, or a signal that lets Python unwind


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: fleet ROOT CLIENT [IDLE-SECONDS]\n")
        return 2
    idle = float(argv[2]) if len(argv) == 3 else IDLE
    return serve(Path(argv[0]), argv[1], idle)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
