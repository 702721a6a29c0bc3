"""The fleet as Prometheus metrics, in its text exposition format (pure).

What `netroot metrics` prints and writes where node_exporter's textfile collector reads it
(`--textfile DIR`: DIR/netroot.prom, replaced atomically as the collector requires). Ages are
given as timestamps, as Prometheus prefers (`time() - netroot_board_last_smoke_timestamp_seconds`
is a smoke's age in a query); a board never smoked has no smoke series.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from netroot.fleet.outcome import Outcome
from netroot.fleet.state import State
from netroot.fleet.status import BoardStatus

TEXTFILE_NAME = "netroot.prom"
_FAILED = {o.value for o in (Outcome.FAILED, Outcome.UNREACHABLE, Outcome.ROLLBACK_FAILED)}
_FAILED.add(Outcome.ROLLED_BACK.value)


def _label(value: object) -> str:
    """A label value escaped as the text format says (backslash, quote, newline)."""
    text = str(value)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Mapping[str, object]) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in pairs.items()) + "}"


class _Family:
    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name, self.kind, self.help = name, kind, help_text
        self.samples: list[str] = []

    def add(self, labels: Mapping[str, object], value: float) -> None:
        number = repr(float(value)) if value != int(value) else str(int(value))
        self.samples.append(f"{self.name}{_labels(labels)} {number}")

    def lines(self) -> list[str]:
        if not self.samples:
            return []
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}", *self.samples]


def render(rows: Sequence[BoardStatus], state: State) -> str:
    """The metrics of `rows` (what `status` computed) and of the recorded rollout."""
    up = _Family("netroot_board_up", "gauge", "1 when netroot reached the board over SSH.")
    info = _Family(
        "netroot_board_version_info", "gauge", "The version a board runs and should run."
    )
    in_line = _Family(
        "netroot_board_in_line", "gauge", "1 when the board runs what it should (no drift)."
    )
    smoke_ok = _Family("netroot_board_last_smoke_ok", "gauge", "1 when its last smoke was green.")
    smoke_at = _Family(
        "netroot_board_last_smoke_timestamp_seconds", "gauge", "When its last smoke ended."
    )
    for r in rows:
        board = {"board": r.board, "server": r.server}
        up.add(board, r.reachable)
        running = r.mounted or ""
        info.add({**board, "running": running, "desired": r.should_run or ""}, 1)
        in_line.add(board, not r.drift)
        if r.last_smoke is not None:
            smoke_ok.add(board, r.last_smoke == Outcome.OK.value)
        if r.last_smoke_time is not None:
            smoke_at.add(board, r.last_smoke_time)
    families = [up, info, in_line, smoke_ok, smoke_at, *_rollout(state)]
    return "\n".join(line for f in families for line in f.lines()) + "\n"


def _rollout(state: State) -> Iterable[_Family]:
    record = state.rollout
    if record is None:
        return []
    boards = [s["board"] for batch in record.plan.get("batches", []) for s in _steps(batch)]
    counts = {"done": 0, "failed": 0, "remaining": 0}
    for name in boards:
        st = state.boards.get(name)
        phase = st.phase if st else "idle"
        if phase == Outcome.OK.value and st is not None and st.assigned == record.to_version:
            counts["done"] += 1
        elif phase in _FAILED:
            counts["failed"] += 1
        else:
            counts["remaining"] += 1
    progress = _Family("netroot_rollout_boards", "gauge", "The last rollout's boards, by state.")
    labels = {"image": record.name or record.image, "to_version": record.to_version}
    for key, count in counts.items():
        progress.add({**labels, "state": key}, count)
    about = _Family("netroot_rollout_info", "gauge", "The last rollout and how it stands.")
    about.add({**labels, "outcome": record.outcome}, 1)
    started = _Family(
        "netroot_rollout_started_timestamp_seconds", "gauge", "When the last rollout started."
    )
    started.add(labels, record.started)
    return [progress, about, started]


def _steps(batch: Any) -> list[Mapping[str, Any]]:
    return (
        [s for s in batch if isinstance(s, Mapping) and "board" in s]
        if isinstance(batch, list)
        else []
    )
