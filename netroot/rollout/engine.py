"""Drive a planned rollout: switch each batch, smoke it, stop at the budget, put failures back.

The engine knows nothing of Ansible or SSH: it talks to a `Fleet` (switch, smoke), so the
budget and rollback logic is tested on its own and the real fleet is a thin adapter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from netroot.rollout.plan import Plan, after_batch
from netroot.rollout.state import RolloutRecord, State

# Outcome of one operation on one board: "ok" | "failed" | "unreachable", and a message.
Outcome = tuple[str, str]


class Fleet(Protocol):
    def switch(self, versions: Mapping[str, str], stagger: float) -> dict[str, Outcome]:
        """Point each board at its version and remount (one fleet run for the whole batch)."""

    def smoke(self, boards: Sequence[str], versions: Mapping[str, str]) -> dict[str, Outcome]:
        """Smoke each board against the version it should run."""


@dataclass
class BoardResult:
    board: str
    batch: int
    outcome: str  # ok | failed | rolled-back | rollback-failed | unreachable | not-reached
    version: str | None  # what it runs now
    message: str = ""


@dataclass
class RolloutResult:
    results: list[BoardResult] = field(default_factory=list)
    stopped: bool = False
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.stopped and all(r.outcome in ("ok",) for r in self.results)


def run_rollout(
    plan: Plan,
    state: State,
    fleet: Fleet,
    image: str,
    log: Callable[[str], None] = lambda _m: None,
) -> RolloutResult:
    """Execute `plan`, recording every board's phase in `state` as it changes."""
    state.rollout = RolloutRecord(image, plan.to_version, plan.to_dict(), started=time.time())
    state.save()
    result = RolloutResult()
    failed = 0
    verified = 0
    try:
        for index, batch in enumerate(plan.batches):
            label = "canary" if plan.canary and index == 0 else f"batch {index}"
            log(f"{label}: {', '.join(s.board for s in batch)} -> {plan.to_version}")
            for step in batch:
                st = state.board(step.board)
                st.phase, st.message = "switching", ""
            state.save()
            switched = fleet.switch({s.board: s.to_version for s in batch}, plan.stagger)
            to_smoke = []
            for step in batch:
                st = state.board(step.board)
                status, message = switched.get(step.board, ("failed", "no result"))
                if status == "ok":
                    st.assigned, st.phase = step.to_version, "smoking"
                    to_smoke.append(step.board)
                    continue
                if status == "unreachable":
                    st.phase, st.message = "unreachable", message
                    result.results.append(
                        BoardResult(step.board, index, "unreachable", st.last_good, message)
                    )
                else:  # a half-done switch: put the board back on what it ran
                    failed += 1
                    result.results.append(
                        _roll_back(state, fleet, step.board, index, f"switch: {message}", log)
                    )
            state.save()
            smoked = (
                fleet.smoke(to_smoke, {b: plan.to_version for b in to_smoke}) if to_smoke else {}
            )
            for board in to_smoke:
                st = state.board(board)
                status, message = smoked.get(board, ("failed", "no result"))
                st.smoke_status, st.smoke_time, st.message = (
                    "pass" if status == "ok" else status,
                    time.time(),
                    message,
                )
                if status == "ok":
                    st.record_good(plan.to_version)
                    st.phase = "ok"
                    verified += 1
                    result.results.append(BoardResult(board, index, "ok", plan.to_version))
                elif status == "unreachable":
                    st.phase = "unreachable"
                    result.results.append(
                        BoardResult(board, index, "unreachable", st.assigned, message)
                    )
                else:
                    failed += 1
                    result.results.append(_roll_back(state, fleet, board, index, message, log))
                state.save()
            decision = after_batch(plan, index, failed, verified)
            log(decision.reason)
            if not decision.go_on:
                result.stopped = decision.reason != "all batches done"
                result.reason = decision.reason
                for later in plan.batches[index + 1 :]:
                    for step in later:
                        result.results.append(
                            BoardResult(step.board, -1, "not-reached", step.from_version)
                        )
                break
    except KeyboardInterrupt:
        assert state.rollout is not None
        state.rollout.outcome, state.rollout.finished = "interrupted", time.time()
        state.rollout.reason = "interrupted: `netroot rollout` again resumes, `rollback` undoes"
        state.save()
        raise
    assert state.rollout is not None
    state.rollout.outcome = "stopped" if result.stopped else "completed"
    state.rollout.reason = result.reason
    state.rollout.finished = time.time()
    state.save()
    return result


def _roll_back(
    state: State, fleet: Fleet, board: str, index: int, why: str, log: Callable[[str], None]
) -> BoardResult:
    """Put a board that failed its smoke back on its last good version, and smoke that."""
    st = state.board(board)
    st.phase = "failed"
    state.save()
    good = st.last_good
    if good is None:
        return BoardResult(board, index, "failed", st.assigned, f"{why}; no last good version")
    log(f"{board}: smoke failed ({why}); back to {good}")
    back = fleet.switch({board: good}, 0.0).get(board, ("failed", "no result"))
    if back[0] == "ok":
        st.assigned = good
        again = fleet.smoke([board], {board: good}).get(board, ("failed", "no result"))
        st.smoke_status, st.smoke_time = ("pass" if again[0] == "ok" else again[0]), time.time()
        if again[0] == "ok":
            st.phase = "rolled-back"
            return BoardResult(board, index, "rolled-back", good, why)
        back = again
    st.phase, st.message = "failed", f"rollback to {good} failed: {back[1]}"
    return BoardResult(board, index, "rollback-failed", st.assigned, st.message)


def run_rollback(
    state: State, fleet: Fleet, versions: Mapping[str, str], log: Callable[[str], None]
) -> list[BoardResult]:
    """Switch boards to the given (earlier) versions in one fleet run, then smoke them."""
    switched = fleet.switch(versions, 0.0)
    results: list[BoardResult] = []
    smoked_ok = [b for b in versions if switched.get(b, ("failed", ""))[0] == "ok"]
    smoked = fleet.smoke(smoked_ok, {b: versions[b] for b in smoked_ok}) if smoked_ok else {}
    for board, version in versions.items():
        st = state.board(board)
        status, message = switched.get(board, ("failed", "no result"))
        if status == "ok":
            st.assigned = version
            status, message = smoked.get(board, ("failed", "no result"))
            st.smoke_status, st.smoke_time = ("pass" if status == "ok" else status), time.time()
        if status == "ok":
            st.record_good(version)
            st.phase, st.message = "rolled-back", ""
            results.append(BoardResult(board, 0, "rolled-back", version))
        else:
            st.phase, st.message = ("unreachable" if status == "unreachable" else "failed"), message
            results.append(BoardResult(board, 0, st.phase, st.assigned, message))
        log(f"{board}: {results[-1].outcome} {results[-1].version or ''}")
    state.save()
    return results
