"""The board-state rules, in one place: what is recorded when, and what a board should run.

Every command goes through `Fleet` for the fleet state: `writing` is the one lock -> load ->
(decide, record) -> save path of the commands that change it; `record_smoke_results` takes the
same lock for the short write after a smoke; `load` is for readers, which never lock. The CLI
parses, calls these, and renders. The functions that only decide are pure, and the few that
read the export tree say so.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netroot.errors import NetrootError, UsageError
from netroot.fleet import events
from netroot.fleet.desired import Desired, desired_all
from netroot.fleet.outcome import Outcome, from_smoke_status
from netroot.fleet.root import ExportRoot, LocalRoot
from netroot.fleet.state import State
from netroot.inventory import Board, Inventory, NfsServer

if TYPE_CHECKING:
    from netroot.fleet.boardfacts import BoardFacts


@dataclass(frozen=True)
class Fleet:
    """An inventory and the export root whose state it shares with every other control host.

    export_root: where the state, the lock and the fleet home's `current` live (fleet/root.py):
    the fleet home's (Inventory.server). None: its export root on this host; a remote one
    (netroot_export_remote) is opened by the CLI (netroot.fleet.where.open_fleet) and passed
    in. roots: every server's own root (its versions and its `current`), by server name; a
    server not listed is its export root on this host.
    """

    inventory: Inventory
    export_root: ExportRoot | None = None
    roots: Mapping[str, ExportRoot] = field(default_factory=dict)

    @property
    def store(self) -> ExportRoot:
        if self.export_root is not None:
            return self.export_root
        return LocalRoot(self.root)

    @property
    def root(self) -> Path:
        """The local export root's path (a remote root has none here)."""
        return local_path(self.inventory.server)

    def root_of(self, server: str) -> ExportRoot:
        """Where a server's versions and `current` live (the fleet home's is the store)."""
        if server in self.roots:
            return self.roots[server]
        if server == self.inventory.server.name:
            return self.store
        return LocalRoot(local_path(self.inventory.servers[server]))

    def load(self) -> State:
        """The fleet state (read-only; a legacy controller-local file is read if need be)."""
        return self.store.load(self.inventory.path)

    def refuse_if_locked(self, *, break_lock: bool = False) -> None:
        """Exit 6 now when another writer holds the lock (before a slow preparation)."""
        self.store.refuse_if_locked(break_lock=break_lock)

    @contextlib.contextmanager
    def locked(self, command: str, *, break_lock: bool = False) -> Iterator[None]:
        """Hold the writer's lock (exit 6 when another writer holds it)."""
        with self.store.locked(command, break_lock=break_lock):
            yield

    @contextlib.contextmanager
    def writing(
        self, command: str, *, break_lock: bool = False, check: bool = False
    ) -> Iterator[State]:
        """Lock, load, let the caller decide and record, save: the writers' one path.

        The state is read under the lock, so it holds what any earlier writer recorded; it is
        saved only when the caller changed it. check: neither locked nor saved (--check).
        """
        held = contextlib.nullcontext() if check else self.locked(command, break_lock=break_lock)
        with held:
            state = self.load()
            state.command = command
            before = state.snapshot()
            yield state
            if not check and (state.legacy is not None or state.snapshot() != before):
                state.save()

    def record_smoke_results(self, command: str, results: Iterable[tuple[str, str, bool]]) -> str:
        """Record (board, smoke status, reachable) under the writer's lock.

        "" when recorded, else why not: this host does not see the export root, cannot write
        in it, or another writer holds the lock (a smoke never waits for, nor breaks, a
        rollout). The smoke's own report and exit code do not depend on it.
        """
        why = self.store.unwritable()
        if why:
            return why
        try:
            with self.writing(command) as state:
                record_smoke(state, results)
        except NetrootError as exc:  # LockHeld, or the lock cannot be written (read-only root)
            return exc.message
        return ""

    def current_of(self, image: str, server: str = "") -> str | None:
        """The image's release pointer `current` on a server (default: the fleet home)."""
        return self.root_of(server or self.inventory.server.name).current(image)

    def desired(
        self, boards: Iterable[Board], state: State, down: dict[str, str] | None = None
    ) -> dict[str, Desired]:
        """Each board's version; a never-assigned board follows its own server's `current`.

        down: given, a server whose `current` cannot be read is recorded there (server ->
        why) and its boards are decided without it, instead of failing the whole call.
        """
        assigned = {n: b.assigned for n, b in state.boards.items()}
        listed = list(boards)
        out: dict[str, Desired] = {}
        for server in dict.fromkeys(b.server for b in listed):
            mine = [b for b in listed if b.server == server]
            current = functools.partial(self.current_of, server=server)
            try:
                out |= desired_all(mine, assigned, current)
            except NetrootError as exc:
                if down is None or not server:
                    raise
                down[server] = exc.message
                out |= desired_all(mine, assigned, lambda _image: None)
        return {b.name: out[b.name] for b in listed}

    def has_versions(self, boards: Iterable[Board], versions: Iterable[str]) -> dict[str, bool]:
        """Whether each board's own server holds each version of its image, keyed
        "server:image@version" (reads each server's export tree)."""
        wanted = sorted(set(versions))
        pairs = sorted({(b.server, b.image) for b in boards})
        return {
            f"{server}:{image}@{v}": found
            for server, image in pairs
            for v, found in self.root_of(server).has_versions(image, wanted).items()
        }

    def release(
        self, image: str, version: str, servers: Iterable[str], command: str,
        log: Callable[[str], None] = lambda _m: None,
    ) -> bool:  # fmt: skip
        """Move `current` to `version` on every server, if every one holds it (call with the
        writer's lock held: another server's root is locked only while its pointer moves).

        A server that cannot be reached is not released (False, and why in `log`); the next
        run releases it, the servers already moved staying as they are.
        """
        roots = {s: self.root_of(s) for s in dict.fromkeys(servers)}
        moved = True
        for server, root in roots.items():
            try:
                if not root.has_versions(image, [version])[version]:
                    log(f"{server}: has no {image} {version}: current not moved")
                    return False
            except NetrootError as exc:
                log(f"{server}: {exc.message}: current not moved there (run it again)")
                return False
        for server, root in {r.where: (s, r) for s, r in roots.items()}.values():
            try:
                if root.where == self.store.where:
                    root.switch_current(image, version)
                else:
                    with root.locked(f"{command} (releasing {image} {version})", break_lock=False):
                        root.switch_current(image, version)
                self.store.append_events(
                    [events.released(image, version, server, command).to_json()]
                )
            except NetrootError as exc:
                log(f"{server}: {exc.message}: current not moved there (run it again)")
                moved = False
        return moved

    def protection(self, image: str) -> dict[str, list[str]]:
        """Versions of `image` that prune must keep, each with why (reads; never locks)."""
        boards = [b for b in self.inventory.boards.values() if b.image == image]
        state = self.load()
        return protection_reasons(boards, state, self.desired(boards, state), image)


def local_path(server: NfsServer) -> Path:
    """A server's export root on this host (a remote root has none here)."""
    if server.remote:
        raise UsageError(
            f"{server.name}: the export root is on that server (netroot_export_remote): "
            "it has no path on this host",
            "reach it through the netroot CLI, which opens it over SSH",
        )
    return Path(server.export_root)


def provision_versions(desired: Mapping[str, Desired]) -> dict[str, str]:
    """The versions a provision mounts: each board's desired version (pure).

    An assigned board keeps its assignment through any provision; a never-assigned one gets
    `current` as it is when the run is planned.
    """
    return {board: d.version for board, d in desired.items() if d.version}


def record_provision(state: State, mounted: Mapping[str, str]) -> None:
    """What a provision left mounted; the assignment is never changed by a provision."""
    for board, version in mounted.items():
        state.board(board).mounted = version


def record_smoke(
    state: State, results: Iterable[tuple[str, str, bool]], now: float | None = None
) -> None:
    """Record (board, smoke status, reachable) results in the rollout's vocabulary."""
    when = time.time() if now is None else now
    for board, status, reachable in results:
        st = state.board(board)
        st.smoke_status, st.smoke_time = from_smoke_status(status, reachable).value, when


def smoke_expectations(desired: Mapping[str, Desired]) -> dict[str, dict[str, Any]]:
    """What the smoke's version check expects of each board (pure)."""
    return {board: {"version": d.version} for board, d in desired.items() if d.version}


WHY = {"pin": "pinned by", "assigned": "assigned to", "current": "followed by"}


def protection_reasons(
    boards: Iterable[Board], state: State, desired: Mapping[str, Desired], image: str
) -> dict[str, list[str]]:
    """Versions of `image` that prune must keep: what a board should run, is assigned, last
    ran green, or has mounted, each with why in words ("pinned by pi-01", "last green on
    pi-02"), for prune's table (pure)."""
    keep: dict[str, list[str]] = {}
    for board in boards:
        if board.image != image:
            continue
        st = state.boards.get(board.name)
        wanted = desired.get(board.name)
        found = [(wanted.version, WHY.get(wanted.source, "run by"))] if wanted else []
        if st is not None:
            found += [(st.assigned, "assigned to"), (st.last_good, "last green on")]
            found.append((st.mounted, "mounted by"))
        for version, why in found:
            reason = f"{why} {board.name}"
            if version and reason not in keep.setdefault(version, []):
                keep[version].append(reason)
    return keep


def plan_sources(
    state: State, observed: Mapping[str, BoardFacts | None], to_version: str
) -> dict[str, str | None]:
    """What each board runs now, for the rollout plan (pure).

    A board counts as already on `to_version` only when it has it mounted and smoked it green
    (a rollout killed between switch and smoke is resumed by smoking it again); an unreachable
    board is taken to run its last good version.
    """
    out: dict[str, str | None] = {}
    for board, facts in observed.items():
        st = state.boards.get(board)
        last_good = st.last_good if st else None
        mounted = facts.mounted if facts is not None else last_good
        if mounted == to_version and last_good != to_version:
            mounted = last_good
        out[board] = mounted
    return out


def adopt_observed(state: State, observed: Mapping[str, BoardFacts | None]) -> None:
    """A board that ran a version before netroot recorded anything: that version is its fallback."""
    for board, facts in observed.items():
        if facts is None or not facts.mounted:
            continue
        st = state.board(board)
        st.mounted = facts.mounted
        if st.last_good is None:
            st.assigned = st.assigned or facts.mounted
            st.record_good(facts.mounted)


def rollback_versions(
    boards: Iterable[Board], state: State, to: str | None, exists: Mapping[str, bool]
) -> dict[str, str]:
    """Where rollback takes each board: --to, else its previous good version (pure).

    exists: whether each board's own server holds the version, checked by the caller
    (Fleet.has_versions), keyed "server:image@version": a board is never pointed at a version
    its server lacks.
    """
    versions: dict[str, str] = {}
    for board in boards:
        want = to or state.board(board.name).previous_good()
        if want is None:
            raise UsageError(f"{board.name}: no earlier good version recorded", "pass --to ID")
        if not exists.get(f"{board.server}:{board.image}@{want}", False):
            raise UsageError(
                f"{board.name}: {board.image} has no version {want} on its server {board.server}",
                f"see `netroot versions {board.image}`; export it there first",
            )
        versions[board.name] = want
    return versions


def rollout_green(results: Iterable[Any], targeted: Iterable[str]) -> bool:
    """Every targeted board ended on the new version, smoked green (pure)."""
    outcomes = {r.board: r.outcome for r in results}
    return all(outcomes.get(b) == Outcome.OK for b in targeted)
