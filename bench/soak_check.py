"""The fault soak's invariants, checked on what was read from the lab after each operation (pure).

`bench/soak.py` reads the lab into a `Seen` (status, the fleet state's text, the event log's
text, each server's versions, manifests and `current`, the locks found held) and describes the
operation that just ended as a `Step`; `check` returns every broken invariant, each one line
naming the board, server or version. Nothing here touches the lab, so each invariant is proved
to fail on a fake lab state (tests/unit/bench/test_soak_check.py).

The invariants (issue 38):
- every powered board ends on a version that boots and mounts: reachable, something mounted,
  its chroot runs a command, that version visible on its server; and it is the version the
  fleet state says, or status reports the drift;
- `current` moved only on green: the operation that moved it ended with exit 0 (itself or its
  rerun), and only an export or a rollout moves it;
- no version visible without its manifest (and `current` names a visible version);
- no lock left held once no netroot runs;
- the fleet state parses and matches the event history (each board's assigned, mounted and
  last good version are the last such event's);
- rerunning the interrupted command finishes the job (its rerun exits 0).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# The operations that may move an image's `current`: an export is a release, a rollout moves
# it once every board is on the version and smoked green. Rollback and provision never do.
MOVES_CURRENT = frozenset({"export", "rollout"})

# What the state's per-board keys are called in the event log (netroot/fleet/events.py).
TRACKED = {"assigned": "assigned", "mounted": "mounted", "last_good": "good"}

INVARIANTS = (
    "board-runs-a-version",
    "current-only-on-green",
    "version-has-manifest",
    "no-lock-held",
    "state-matches-events",
    "rerun-finishes",
)

BUSY = 6  # netroot's exit when another writer holds the lock (netroot/errors.py): a refusal

Window = Mapping[str, str | None]


@dataclass(frozen=True)
class BoardSeen:
    """One board as the soak saw it after an operation and its rerun."""

    name: str
    powered: bool
    reachable: bool
    mounted: str | None  # what `netroot status` read on it
    runs: bool  # a command ran in its version's chroot
    drift: str  # what status reports ("" in line)
    server: str = "nfs-01"


@dataclass(frozen=True)
class ServerSeen:
    """One NFS server's export of the image: version directories, manifests, `current`."""

    versions: frozenset[str]
    manifests: frozenset[str]
    current: str | None


@dataclass(frozen=True)
class Seen:
    boards: tuple[BoardSeen, ...]
    servers: Mapping[str, ServerSeen]
    state_text: str | None  # the fleet state file (None: none yet)
    events_text: str  # `netroot events --json` (a JSON list) or the log's JSON lines
    locks: tuple[str, ...] = ()  # each lock found held, described


@dataclass(frozen=True)
class Step:
    """The operation that just ended: its command, exit code, whether a fault interrupted it,
    its rerun's exit code (None: not rerun), `current` on each server before it, after it
    (`current_mid`) and after its rerun (`current_after`; the same as mid when not rerun).
    A second control host's operation run beside it (`second_op`, "" for none) has its exit
    code, its rerun's (after the first one's rerun) and `current` after that (`current_end`)."""

    op: str
    rc: int
    interrupted: bool = False
    rerun_rc: int | None = None
    current_before: Mapping[str, str | None] = field(default_factory=dict)
    current_mid: Mapping[str, str | None] = field(default_factory=dict)
    current_after: Mapping[str, str | None] = field(default_factory=dict)
    second_op: str = ""
    second_rc: int | None = None
    second_rerun_rc: int | None = None
    current_end: Mapping[str, str | None] = field(default_factory=dict)

    def runs(self) -> Iterator[tuple[str, list[tuple[str, int]], Window, Window]]:
        """Each stretch of time: what ran in it (operation, exit code) and `current` before
        and after it. The second control host runs during the first stretch."""
        first = [(self.op, self.rc)]
        if self.second_op and self.second_rc is not None:
            first.append((self.second_op, self.second_rc))
        yield self.op, first, self.current_before, self.current_mid
        if self.rerun_rc is not None:
            again = [(self.op, self.rerun_rc)]
            yield f"{self.op}'s rerun", again, self.current_mid, self.current_after
        if self.second_rerun_rc is not None:
            end = [(self.second_op, self.second_rerun_rc)]
            after = self.current_after if self.rerun_rc is not None else self.current_mid
            yield f"the second {self.second_op}'s rerun", end, after, self.current_end or after


@dataclass(frozen=True)
class Violation:
    invariant: str
    what: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.what}"


def check(seen: Seen, step: Step | None = None) -> list[Violation]:
    """Every invariant `seen` (and `step`, when an operation just ended) breaks."""
    state, state_error = parse_state(seen.state_text)
    out = list(_manifests(seen))
    out += _locks(seen)
    if state_error:
        out.append(Violation("state-matches-events", state_error))
    else:
        out += _state_vs_events(state, seen.events_text)
    out += _boards(seen, state)
    if step is not None:
        out += _step(step)
    return out


def parse_state(text: str | None) -> tuple[Mapping[str, Any], str]:
    """The state's boards (name -> fields), or the reason it does not parse."""
    if text is None:
        return {}, ""
    try:
        data = json.loads(text)
    except ValueError as e:
        return {}, f"the fleet state does not parse: {e}"
    if not isinstance(data, dict) or not isinstance(data.get("boards"), dict):
        return {}, "the fleet state has no boards mapping"
    return data["boards"], ""


def parse_events(text: str) -> tuple[list[Mapping[str, Any]], str]:
    """The events of `netroot events --json` (a list) or of the log's lines, or why not."""
    stripped = text.strip()
    if not stripped:
        return [], ""
    try:
        if stripped.startswith("["):
            data = json.loads(stripped)
        else:
            data = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    except ValueError as e:
        return [], f"the event log does not parse: {e}"
    if not all(isinstance(e, dict) for e in data):
        return [], "the event log holds something that is not an event"
    return data, ""


def _manifests(seen: Seen) -> Iterator[Violation]:
    for name, srv in sorted(seen.servers.items()):
        for vid in sorted(srv.versions - srv.manifests):
            yield Violation("version-has-manifest", f"{name}: version {vid} has no manifest")
        if srv.current is not None and srv.current not in srv.versions:
            yield Violation(
                "version-has-manifest", f"{name}: current {srv.current} is not a version"
            )


def _locks(seen: Seen) -> Iterator[Violation]:
    for lock in seen.locks:
        yield Violation("no-lock-held", f"left held: {lock}")


def _state_vs_events(boards: Mapping[str, Any], events_text: str) -> Iterator[Violation]:
    found, error = parse_events(events_text)
    if error:
        yield Violation("state-matches-events", error)
        return
    last: dict[tuple[str, str], str | None] = {}
    for event in found:  # oldest first: the last one of each kind wins
        board = event.get("board")
        if board is not None and event.get("event") in TRACKED.values():
            last[(str(board), str(event["event"]))] = event.get("version")
    for name, fields in sorted(boards.items()):
        for key, kind in TRACKED.items():
            value = fields.get(key) if isinstance(fields, dict) else None
            logged = last.get((name, kind))
            if value and logged != value:
                yield Violation(
                    "state-matches-events",
                    f"{name}: the state says {key} {value}, the event log's last {kind} "
                    f"event says {logged or 'nothing'}",
                )


def _boards(seen: Seen, state: Mapping[str, Any]) -> Iterator[Violation]:
    for b in seen.boards:
        if not b.powered:
            continue
        where = seen.servers.get(b.server)
        if not b.reachable:
            yield Violation("board-runs-a-version", f"{b.name} is powered but not reachable")
        elif not b.mounted:
            yield Violation("board-runs-a-version", f"{b.name} has no version mounted")
        elif not b.runs:
            yield Violation(
                "board-runs-a-version",
                f"{b.name}: {b.mounted} is mounted but no command runs in it",
            )
        elif where is not None and b.mounted not in where.versions:
            yield Violation(
                "board-runs-a-version", f"{b.name} runs {b.mounted}, not a version on {b.server}"
            )
        else:
            fields = state.get(b.name)
            assigned = fields.get("assigned") if isinstance(fields, dict) else None
            if assigned and b.mounted != assigned and not b.drift:
                yield Violation(
                    "board-runs-a-version",
                    f"{b.name} runs {b.mounted}, the state says {assigned}, status says no drift",
                )


def refused(op: str, rc: int) -> bool:
    """A second control host's run that needs no rerun: green, refused because the first one
    held the lock, or a rollback with nothing to roll back to (exit 2)."""
    return rc in (0, BUSY) or (op == "rollback" and rc == 2)


def _step(step: Step) -> Iterator[Violation]:
    for run, ran, was, now in step.runs():
        for server in sorted(set(was) | set(now)):
            before, after = was.get(server), now.get(server)
            if before == after or any(op in MOVES_CURRENT and rc == 0 for op, rc in ran):
                continue
            exits = ", ".join(f"{op} exit {rc}" for op, rc in ran)
            yield Violation(
                "current-only-on-green",
                f"{server}: {run} moved current {before} -> {after} ({exits})",
            )
    if step.interrupted and step.rerun_rc is None:
        yield Violation("rerun-finishes", f"the interrupted {step.op} was not run again")
    elif step.rerun_rc not in (None, 0):
        yield Violation(
            "rerun-finishes", f"{step.op} run again after its fault exited {step.rerun_rc}"
        )
    second_failed = step.second_rc is not None and not refused(step.second_op, step.second_rc)
    if second_failed and step.second_rerun_rc is None:
        yield Violation(
            "rerun-finishes",
            f"the second control host's {step.second_op} exited {step.second_rc}, not run again",
        )
    elif step.second_rerun_rc not in (None, 0):
        yield Violation(
            "rerun-finishes",
            f"the second control host's {step.second_op} run again exited {step.second_rerun_rc}",
        )
