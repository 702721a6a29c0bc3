"""The fleet's event log: every change of the fleet state and every verdict as one JSON line (pure).

Events are not written by the code that decides: they are what changed between two saves of the
state (`changes`), so every writer (rollout, rollback, provision, smoke, a release of `current`)
logs by saving, and the log cannot disagree with the state it describes. The lines are appended
under the writer's lock, before the state they describe is saved (a crash between the two
leaves an event the rerun logs again, never a change without its event), beside the state in
the fleet home's export root (`EVENTS_NAME`), rotated once it reaches `MAX_BYTES` (one older
file kept: at most about twice that on disk).

One event: time (epoch seconds), board (None for the fleet's own: a rollout, a release),
version, event (its type, below), reason (why, in the words the deciding code recorded:
unreachable and why, which smoke check failed, why it was rolled back, the budget spent), from
(the version before, where one moved), command (what wrote it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from netroot.remote import fleet as remote_fleet

# About 20k events a file: weeks of a 100-board lab's rollouts. The server-side helper appends
# to the same file, so the names are its.
EVENTS_NAME = remote_fleet.EVENTS_NAME
MAX_BYTES = remote_fleet.EVENTS_MAX_BYTES

# The types: a board's `phase` names what it is doing (switching, smoking) or how its operation
# ended (the rollout's Outcome values: ok, failed, unreachable, rolled-back, rollback-failed,
# not-reached); the others name a recorded fact.
ASSIGNED = "assigned"  # the version the board is to run (rollout, rollback)
MOUNTED = "mounted"  # what a provision left mounted
GOOD = "good"  # the version that last smoked green on it
SMOKE = "smoke"  # a smoke's verdict (reason: which check failed, or why it was unreachable)
ROLLOUT = "rollout"  # a rollout started, or ended (version: its target; reason: how and why)
RELEASED = "released"  # an image's `current` moved (board: None; reason: server)


@dataclass(frozen=True)
class Event:
    time: float
    board: str | None
    version: str | None
    event: str
    reason: str = ""
    command: str = ""
    previous: str | None = None  # JSON: "from"

    def to_json(self) -> str:
        data = asdict(self)
        data["from"] = data.pop("previous")
        return json.dumps(data, sort_keys=True)


Snapshot = tuple[Mapping[str, Mapping[str, Any]], Mapping[str, Any] | None]


def changes(
    before: Snapshot, after: Snapshot, command: str, now: float | None = None
) -> list[Event]:
    """The events between two snapshots of the fleet state (boards, rollout record), in board
    order; `command` names the writer."""
    at = time.time() if now is None else now
    out: list[Event] = []
    old_boards, old_rollout = before
    new_boards, new_rollout = after
    for name in sorted(new_boards):
        out.extend(_board_changes(name, old_boards.get(name, {}), new_boards[name], command, at))
    out.extend(_rollout_changes(old_rollout, new_rollout, command, at))
    return out


def _board_changes(
    name: str, old: Mapping[str, Any], new: Mapping[str, Any], command: str, at: float
) -> Iterator[Event]:
    def moved(key: str) -> bool:
        return old.get(key) != new.get(key)

    message = str(new.get("message") or "")
    if moved("assigned") and new.get("assigned"):
        yield Event(at, name, new["assigned"], ASSIGNED, message, command, old.get("assigned"))
    if moved("mounted") and new.get("mounted"):
        yield Event(at, name, new["mounted"], MOUNTED, "", command, old.get("mounted"))
    if moved("smoke_time") and new.get("smoke_status"):
        reason = f"{new['smoke_status']}" + (f": {message}" if message else "")
        yield Event(at, name, new.get("mounted") or new.get("assigned"), SMOKE, reason, command)
    if moved("phase") and new.get("phase") not in (None, "idle"):
        version = new.get("assigned")
        yield Event(at, name, version, str(new["phase"]), message, command)
    if moved("last_good") and new.get("last_good"):
        yield Event(at, name, new["last_good"], GOOD, "", command, old.get("last_good"))


def _rollout_changes(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, command: str, at: float
) -> Iterator[Event]:
    if new is None:
        return
    started = old is None or old.get("started") != new.get("started")
    version = new.get("to_version")
    if started:
        plan = new.get("plan") or {}
        batches = plan.get("batches") or []
        boards = sum(len(b) for b in batches if isinstance(b, list))
        reason = f"started: {new.get('image')} to {boards} boards" if boards else "started"
        yield Event(at, None, version, ROLLOUT, reason, command)
    if new.get("outcome") != "running" and (
        started or old is None or old.get("outcome") == "running"
    ):
        why = str(new.get("reason") or "")
        yield Event(
            at,
            None,
            version,
            ROLLOUT,
            f"{new.get('outcome')}" + (f": {why}" if why else ""),
            command,
        )


def released(image: str, version: str, server: str, command: str) -> Event:
    """`current` of `image` moved to `version` on `server`."""
    return Event(time.time(), None, version, RELEASED, f"{image} current on {server}", command)


def parse(text: str) -> list[Event]:
    """The events of a log's text; a line that is not an event (torn, foreign) is skipped."""
    found = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
            found.append(
                Event(
                    time=float(data["time"]),
                    board=data.get("board"),
                    version=data.get("version"),
                    event=str(data["event"]),
                    reason=str(data.get("reason") or ""),
                    command=str(data.get("command") or ""),
                    previous=data.get("from"),
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return found


def select(
    events: Iterable[Event], board: str | None = None, since: float | None = None
) -> list[Event]:
    """The events about `board` (and the fleet's own, which name none) since `since`."""
    return [
        e
        for e in events
        if (board is None or e.board in (board, None)) and (since is None or e.time >= since)
    ]


def last_by_board(events: Iterable[Event]) -> dict[str, Event]:
    """Each board's latest event: the last stage it was seen in, and since when."""
    last: dict[str, Event] = {}
    for event in events:
        if event.board is not None and event.event != GOOD:
            last[event.board] = event
    return last


def describe(event: Event) -> str:
    """One line for a person: the type, the board, the version and why."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.time))
    who = event.board or "fleet"
    version = f" {event.version}" if event.version else ""
    reason = f": {event.reason}" if event.reason else ""
    return f"{when} {who} {event.event}{version}{reason}"


TSV_COLUMNS = ("time", "board", "event", "version", "reason", "from", "command")


def tsv(event: Event) -> str:
    """One event as a tab-separated line (TSV_COLUMNS; tabs and newlines in a cell are spaces)."""
    cells = (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(event.time)),
        event.board or "", event.event, event.version or "", event.reason,
        event.previous or "", event.command,
    )  # fmt: skip
    return "\t".join(" ".join(str(c).split()) if c else "" for c in cells)
