"""Where the fleet state, the writer's lock and each image's `current` live: one object per
server, the same object that holds its versions (netroot.export.place: export, versions,
verify, prune, repair).

`LocalRoot` is an export root on this host (the NFS server itself, or a host that mounts its
export root): the state file, the lock file and `current` are read and written here.
netroot.fleet.where.RemoteRoot is the same thing on a server reached over SSH (its
netroot_export_remote). netroot.fleet.where.open_root chooses one per NFS server, once, and
`Fleet` gets them (the fleet home's holds the state and the lock); no command asks which it has.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from netroot.export.here import HostRoot
from netroot.export.place import Root
from netroot.fleet.events import EVENTS_NAME, MAX_BYTES
from netroot.fleet.state import State, load_state
from netroot.fsutil import LogCursor, append_lines, read_log, read_log_from
from netroot.remote import lock


class ExportRoot(Root, Protocol):
    """A server's export root: its versions (Root's verbs), and the fleet's state and lock."""

    def load(self, inventory_path: Path | None) -> State: ...

    def locked(self, command: str, *, break_lock: bool) -> AbstractContextManager[Any]: ...

    def refuse_if_locked(self, *, break_lock: bool) -> None: ...

    def current(self, image: str) -> str | None: ...

    def has_versions(self, image: str, versions: Iterable[str]) -> dict[str, bool]: ...

    def switch_current(self, image: str, version: str) -> bool: ...

    def unwritable(self) -> str:
        """Why the state cannot be written from here ("" when it can)."""
        ...

    def append_events(self, lines: list[str]) -> None:
        """Log events (JSON lines; call with the writer's lock held)."""
        ...

    def read_events(self) -> str:
        """The event log's text, its rotated part first ("" when there is none)."""
        ...

    def read_events_from(self, cursor: LogCursor | None) -> tuple[str, LogCursor]:
        """The event log from `cursor` on (None: all of it) and the cursor to read on from
        (fsutil.read_log_from): what `events --follow` polls, never the whole log again."""
        ...


@dataclass(frozen=True)
class LocalRoot(HostRoot):
    def load(self, inventory_path: Path | None) -> State:
        return load_state(self.path, inventory_path)

    def locked(self, command: str, *, break_lock: bool) -> AbstractContextManager[Any]:
        return lock.held(self.path, command, break_lock=break_lock)

    def refuse_if_locked(self, *, break_lock: bool) -> None:
        lock.refuse_if_held(self.path, break_lock=break_lock)

    def current(self, image: str) -> str | None:
        try:
            return Path(os.readlink(self.path / image / "current")).name
        except OSError:
            return None

    def has_versions(self, image: str, versions: Iterable[str]) -> dict[str, bool]:
        from netroot.export.manifest import Layout

        layout = Layout(self.path, image)
        return {v: layout.manifest_path(v).exists() for v in versions}

    def switch_current(self, image: str, version: str) -> bool:
        from netroot.export import verbs
        from netroot.export.manifest import Layout

        return verbs.switch_current(Layout(self.path, image), version)

    def unwritable(self) -> str:
        return "" if self.path.is_dir() else f"the export root {self.path} is not on this host"

    def append_events(self, lines: list[str]) -> None:
        append_lines(self.path / EVENTS_NAME, lines, max_bytes=MAX_BYTES)

    def read_events(self) -> str:
        return read_log(self.path / EVENTS_NAME)

    def read_events_from(self, cursor: LogCursor | None) -> tuple[str, LogCursor]:
        return read_log_from(self.path / EVENTS_NAME, cursor)
