"""The board-state rules, in one place: what is recorded when, and what a board should run.

The CLI parses, calls these, and renders. Everything here works on a `State` (the fleet state
in the export root) and the inventory; the functions that only decide are pure, and the few
that read the export tree say so.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netroot.errors import UsageError
from netroot.inventory import Board, Inventory
from netroot.rollout.desired import Desired, desired_all
from netroot.rollout.outcome import Outcome, from_smoke_status
from netroot.rollout.state import State, load_state

if TYPE_CHECKING:
    from netroot.rollout.status import BoardFacts


@dataclass(frozen=True)
class Fleet:
    """An inventory and the export root whose state it shares with every other control host."""

    inventory: Inventory

    @property
    def root(self) -> Path:
        server = self.inventory.server
        if server.remote:
            # The fleet state, the writer's lock and `current` are read from a local export
            # root; over SSH only `netroot export` writes one so far (issue 21, item 2).
            raise UsageError(
                f"{server.name}: the export root is on that server (netroot_export_remote): "
                "the fleet state and the writer's lock are read from a local export root",
                "run provision/rollout/rollback/status/smoke on the server (or a host that "
                "mounts its export root); `netroot export` works from here",
            )
        return Path(server.export_root)

    def load(self) -> State:
        """The fleet state (read-only; a legacy controller-local file is read if need be)."""
        return load_state(self.root, self.inventory.path)

    def current_of(self, image: str) -> str | None:
        """The image's release pointer `current` (reads the export tree)."""
        from netroot.export.manifest import Layout
        from netroot.export.service import current_id

        return current_id(Layout(self.root, image))

    def desired(self, boards: Iterable[Board], state: State) -> dict[str, Desired]:
        assigned = {n: b.assigned for n, b in state.boards.items()}
        return desired_all(boards, assigned, self.current_of)


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


def protected_versions(
    boards: Iterable[Board], state: State, desired: Mapping[str, Desired], image: str
) -> set[str]:
    """Versions of `image` that prune must keep: what a board should run, is assigned, last ran
    green, or has mounted (pure)."""
    keep: set[str] = set()
    for board in boards:
        if board.image != image:
            continue
        st = state.boards.get(board.name)
        wanted = desired.get(board.name)
        found = [wanted.version if wanted else None]
        if st is not None:
            found += [st.assigned, st.last_good, st.mounted]
        keep |= {v for v in found if v}
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

    exists: (image, version) checked by the caller, keyed "image@version".
    """
    versions: dict[str, str] = {}
    for board in boards:
        want = to or state.board(board.name).previous_good()
        if want is None:
            raise UsageError(f"{board.name}: no earlier good version recorded", "pass --to ID")
        if not exists.get(f"{board.image}@{want}", False):
            raise UsageError(
                f"{board.name}: {board.image} has no version {want}",
                f"see `netroot versions {board.image}`",
            )
        versions[board.name] = want
    return versions


def rollout_green(results: Iterable[Any], targeted: Iterable[str]) -> bool:
    """Every targeted board ended on the new version, smoked green (pure)."""
    outcomes = {r.board: r.outcome for r in results}
    return all(outcomes.get(b) == Outcome.OK for b in targeted)
