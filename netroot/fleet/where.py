"""A remote export root's fleet state, writer's lock and `current`, kept on the NFS server.

With `netroot_export_remote: true` the export root is a path on the server; every control host
that has the inventory works on that one root: the state file and the lock stay there, so two
control hosts see one fleet and one writer. This host opens one session per command to the
server's helper (netroot.remote.fleet, sent as the export's helper is, by netroot.bundle) over
SSH with become (netroot.adapters.serverssh): the state is read and written through it, the lock
is taken by it and lives as long as this command's ssh (a control host killed frees it), and
`current` moves through it only while the lock is held. The versions are reached the same way
(netroot.export.serverroot.ServerRoot: RemoteRoot is that server's root, all verbs in one object).

`open_place` and `open_root` are where it is decided, once, where a version lives: this host's
export root, one server's over SSH, or several servers.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from netroot.adapters import serverssh as adapter
from netroot.bundle import helper_command
from netroot.errors import Exit, NetrootError
from netroot.export.onservers import Servers
from netroot.export.place import Place
from netroot.export.serverroot import ServerRoot, remote_target
from netroot.fleet.root import ExportRoot, LocalRoot
from netroot.fleet.rules import Fleet
from netroot.fleet.state import State, parse_state
from netroot.fsutil import LogCursor
from netroot.inventory import Inventory, NfsServer
from netroot.remote.fleet import PING, STATE_NAME
from netroot.remote.lock import Holder, LockHeld, this_host


class _Session(adapter.HelperSession):
    def reply_error(self, reply: dict[str, Any], what: str) -> NetrootError:
        if reply.get("busy"):
            return LockHeld(Holder(**reply["holder"]), f"{reply['hint']} (on {self.target.name})")
        if "code" in reply:
            return NetrootError(
                f"{self.target.name}: {reply['error']}", reply["hint"], Exit(reply["code"])
            )
        return super().reply_error(reply, what)


class RemoteRoot(ServerRoot):
    """ExportRoot on the NFS server: its versions through the export's helper (ServerRoot),
    the fleet's state and lock through one fleet helper session opened at first use."""

    def __init__(self, server: NfsServer) -> None:
        super().__init__(server)
        self._session: _Session | None = None
        self._mutex = threading.Lock()  # one request at a time: the command's and the pings
        self._held = False  # this session holds the writer's lock

    def _open(self) -> _Session:
        if self._session is not None and self._session.proc.poll() is not None and not self._held:
            # The server went away (and is back, or the request says it is not): a session
            # holding no lock is opened again, one holding the lock never (it is lost).
            self.close()
        if self._session is None:
            target = remote_target(self.server)
            client = f"{this_host()} pid {os.getpid()}"
            command = helper_command("netroot.remote.fleet", [self.server.export_root, client])
            self._session = _Session(target, command, "starting the fleet helper")
            atexit.register(self.close)
        return self._session

    def _ask(self, what: str, op: str, payload: bytes = b"", **fields: Any) -> dict[str, Any]:
        request = {"op": op, **fields, **({"bytes": len(payload)} if payload else {})}
        with self._mutex:
            return self._open().request(request, payload, what)

    def close(self) -> None:
        """End the session (the helper releases a lock it still holds)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def load(self, inventory_path: Path | None) -> State:
        path = Path(self.server.export_root) / STATE_NAME
        text = self._ask("reading the fleet state", "read")["state"]
        if text is None:
            return State(path, store=self._save)
        return State(path, *parse_state(Path(f"{self.server.name}:{path}"), text), store=self._save)

    def _save(self, text: str, events: list[str]) -> None:
        self._ask("saving the fleet state", "save", text.encode(), events=events)

    @contextlib.contextmanager
    def locked(self, command: str, *, break_lock: bool) -> Iterator[None]:
        self._ask("taking the writer's lock", "lock", command=command, break_lock=break_lock)
        self._held = True
        # The helper releases the lock of a holder silent for IDLE seconds (a control host
        # whose network vanished leaves no EOF): ping while the command works.
        stop = threading.Event()
        beat = threading.Thread(target=self._ping, args=(stop,), daemon=True)
        beat.start()
        try:
            yield
        finally:
            stop.set()
            beat.join()
            self._held = False
            if self._session is not None and self._session.proc.poll() is None:
                self._ask("releasing the writer's lock", "unlock")

    def _ping(self, stop: threading.Event) -> None:
        while not stop.wait(PING):
            with self._mutex:
                session = self._session
                if session is None or session.proc.poll() is not None:
                    return  # closed: never reopened from here
                try:
                    session.request({"op": "ping"}, b"", "keeping the writer's lock")
                except NetrootError:
                    return  # the session is gone: the command's next request says why

    def refuse_if_locked(self, *, break_lock: bool) -> None:
        self._ask("reading the writer's lock", "refuse", break_lock=break_lock)

    def current(self, image: str) -> str | None:
        found: str | None = self._ask("reading current", "current", name=image)["current"]
        return found

    def has_versions(self, image: str, versions: Iterable[str]) -> dict[str, bool]:
        wanted = sorted(set(versions))
        has: dict[str, bool] = self._ask("listing versions", "has", name=image, versions=wanted)[
            "has"
        ]
        return has

    def switch_current(self, image: str, version: str) -> bool:
        switched: bool = self._ask("switching current", "switch", name=image, version=version)[
            "switched"
        ]
        return switched

    def unwritable(self) -> str:
        return ""  # the session says why when a write fails

    def append_events(self, lines: list[str]) -> None:
        self._ask("logging events", "events", events=lines)

    def read_events(self) -> str:
        text: str = self._ask("reading the event log", "read_events")["events"]
        return text

    def read_events_from(self, cursor: LogCursor | None) -> tuple[str, LogCursor]:
        answer = self._ask("reading the event log", "read_events", after=cursor)
        ino, offset, first = answer["cursor"]
        return str(answer["events"]), (int(ino), int(offset), int(first))


def open_fleet(inventory: Inventory) -> Fleet:
    """The fleet, each server's export root opened on this host or on that server (chosen
    once; a remote one's session starts at its first use). The fleet home's holds the state
    and the writer's lock (Inventory.server)."""
    roots = {name: open_root(server) for name, server in inventory.servers.items()}
    home = roots[inventory.server.name] if roots else None
    return Fleet(inventory, home, roots)


def open_root(server: NfsServer) -> ExportRoot:
    """A server's export root, as this host reaches it."""
    if server.remote:
        return RemoteRoot(server)
    return LocalRoot(Path(server.export_root))


DEFAULT_ROOT = Path("/srv/netroot")


def open_place(inventory: Inventory | None, root: Path | None) -> Place:
    """Where the export commands work: `root` (--root DIR) on this host; else the inventory's
    NFS servers, several as one place (each its own root), one as its root (here or over SSH);
    with no server listed, DEFAULT_ROOT on this host."""
    if root is not None or inventory is None or not inventory.servers:
        return LocalRoot(root or DEFAULT_ROOT)
    roots = {name: open_root(server) for name, server in inventory.servers.items()}
    if len(roots) == 1:
        return roots[inventory.server.name]
    return Servers(roots, lambda name: serving(inventory, name))


def serving(inventory: Inventory, name: str) -> list[str]:
    """The servers an export of NAME goes to: those serving a board of that image, else all."""
    found = inventory.servers_for(b for b in inventory.boards.values() if b.image == name)
    return [s.name for s in found] or list(inventory.servers)
