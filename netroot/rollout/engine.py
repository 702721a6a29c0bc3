"""Drive a planned rollout: switch each batch, smoke it, stop at the budget, put failures back.

The engine knows nothing of Ansible or SSH: it talks to a `BoardDriver` (switch, smoke), so
the budget and rollback logic is tested on its own and the real driver is a thin adapter. Every
change of a board is recorded in the fleet state (and saved) as it happens, so a rollout
killed at any point can be resumed or rolled back from another control host.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from netroot.fleet.outcome import Outcome, Result
from netroot.fleet.state import RolloutRecord, State
from netroot.inventory import Board
from netroot.rollout.plan import Plan, Step, after_batch

NO_RESULT: Result = (Outcome.FAILED, "no result")


class BoardDriver(Protocol):
    """What the engine drives: the boards of a batch (rollout/drive.py: Ansible and the smoke).

    It is handed the inventory's `Board` values (in a `Step`: the board and its version) and
    answers by board name, the fleet state's key."""

    def switch(self, steps: Sequence[Step], stagger: float) -> dict[str, Result]:
        """Point each board at its version and remount (one run for the whole batch)."""

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        """Smoke each board against the version it should run."""

    def prepare(self, boards: Sequence[Board]) -> dict[str, Result]:
        """Set up each board's boot config (a reboot when it changes), no version (one run)."""


@dataclass
class BoardResult:
    board: str
    batch: int
    outcome: Outcome
    version: str | None  # what it runs now
    message: str = ""


@dataclass
class RolloutResult:
    results: list[BoardResult] = field(default_factory=list)
    stopped: bool = False
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.stopped and all(r.outcome == Outcome.OK for r in self.results)


def _record_smoke(state: State, board: str, result: Result) -> None:
    st = state.board(board)
    st.smoke_status, st.smoke_time, st.message = result[0].value, time.time(), result[1]


def _switch_batch(
    plan: Plan, batch: Sequence[Step], state: State, driver: BoardDriver, index: int,
    result: RolloutResult, log: Callable[[str], None],
) -> list[Step]:  # fmt: skip
    """Switch one batch; returns the steps to smoke, records the others' results."""
    for step in batch:
        st = state.board(step.board.name)
        st.phase, st.message = "switching", ""
    state.save()
    switched = driver.switch(batch, plan.stagger)
    to_smoke = []
    for step in batch:
        board = step.board.name
        st = state.board(board)
        status, message = switched.get(board, NO_RESULT)
        if status == Outcome.OK:
            st.assigned, st.mounted, st.phase = plan.to_version, plan.to_version, "smoking"
            to_smoke.append(step)
        elif status == Outcome.UNREACHABLE:
            # Nothing can be done on it: it keeps its assignment, and spends the budget.
            st.phase, st.message = Outcome.UNREACHABLE.value, message
            result.results.append(
                BoardResult(board, index, Outcome.UNREACHABLE, st.last_good, message)
            )
        else:  # a half-done switch: put the board back on what it ran
            why = f"switch: {message}"
            result.results.append(_roll_back(state, driver, step.board, index, why, log))
    state.save()
    return to_smoke


def _prepare(plan: Plan, driver: BoardDriver, log: Callable[[str], None]) -> None:
    """The plan's fresh boards get their boot config before the canary, wave by wave.

    Nothing is decided here: a board that could not be prepared is set up by its own batch's
    switch (the first provision, reboot included), which counts against the budget as always.
    """
    for wave in plan.prepare:
        names = ", ".join(b.name for b in wave)
        log(f"prepare: {names} (boot config and its reboot; no version yet)")
        for board, (status, message) in driver.prepare(wave).items():
            if status != Outcome.OK:
                log(f"{board}: not prepared ({status.value}: {message}); its batch sets it up")


def run_rollout(
    plan: Plan,
    state: State,
    driver: BoardDriver,
    image: str,
    log: Callable[[str], None] = lambda _m: None,
    name: str = "",
) -> RolloutResult:
    """Execute `plan`, recording every board's phase in `state` as it changes."""
    state.rollout = RolloutRecord(image, plan.to_version, plan.to_dict(), time.time(), name)
    state.save()
    result = RolloutResult()
    failed = 0
    try:
        _prepare(plan, driver, log)
        for index, batch in enumerate(plan.batches):
            label = "canary" if plan.canary and index == 0 else f"batch {index}"
            log(f"{label}: {', '.join(s.board.name for s in batch)} -> {plan.to_version}")
            before = len(result.results)
            to_smoke = _switch_batch(plan, batch, state, driver, index, result, log)
            smoked = driver.smoke(to_smoke) if to_smoke else {}
            for step in to_smoke:
                board = step.board.name
                st = state.board(board)
                status, message = smoked.get(board, NO_RESULT)
                _record_smoke(state, board, (status, message))
                if status == Outcome.OK:
                    st.record_good(plan.to_version)
                    st.phase = Outcome.OK.value
                    result.results.append(BoardResult(board, index, Outcome.OK, plan.to_version))
                elif status == Outcome.UNREACHABLE:
                    st.phase = Outcome.UNREACHABLE.value
                    result.results.append(
                        BoardResult(board, index, Outcome.UNREACHABLE, st.assigned, message)
                    )
                else:
                    result.results.append(
                        _roll_back(state, driver, step.board, index, message, log)
                    )
            # One write for the batch's verdicts (a failed board's rollback saved its own steps):
            # a save is the whole fleet's state, so one per board made a rollout's writes grow
            # with the square of the fleet (bench/bench_fleet_books.py).
            state.save()
            batch_failed = sum(1 for r in result.results[before:] if r.outcome != Outcome.OK)
            failed += batch_failed
            decision = after_batch(plan, index, failed, batch_failed)
            log(decision.reason)
            if not decision.go_on:
                result.stopped = decision.reason != "all batches done"
                result.reason = decision.reason
                for later in plan.batches[index + 1 :]:
                    for step in later:
                        result.results.append(
                            BoardResult(step.board.name, -1, Outcome.NOT_REACHED, step.from_version)
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
    state: State, driver: BoardDriver, failed: Board, index: int, why: str,
    log: Callable[[str], None],
) -> BoardResult:  # fmt: skip
    """Put a board that failed back on its last good version, and smoke that."""
    board = failed.name
    st = state.board(board)
    st.phase = Outcome.FAILED.value
    state.save()
    good = st.last_good
    if good is None:
        return BoardResult(
            board, index, Outcome.FAILED, st.assigned, f"{why}; no last good version"
        )
    log(f"{board}: failed ({why}); back to {good}")
    step = Step(failed, None, good)
    back = driver.switch([step], 0.0).get(board, NO_RESULT)
    if back[0] == Outcome.OK:
        st.assigned, st.mounted = good, good
        back = driver.smoke([step]).get(board, NO_RESULT)
        _record_smoke(state, board, back)
        if back[0] == Outcome.OK:
            st.phase, st.message = Outcome.ROLLED_BACK.value, why
            return BoardResult(board, index, Outcome.ROLLED_BACK, good, why)
    st.phase, st.message = Outcome.FAILED.value, f"rollback to {good} failed: {back[1]}"
    return BoardResult(board, index, Outcome.ROLLBACK_FAILED, st.assigned, st.message)


def run_rollback(
    state: State, driver: BoardDriver, steps: Sequence[Step], log: Callable[[str], None]
) -> list[BoardResult]:
    """Switch boards to the given (earlier) versions in one run, then smoke them."""
    switched = driver.switch(steps, 0.0)
    results: list[BoardResult] = []
    smoked_ok = [s for s in steps if switched.get(s.board.name, NO_RESULT)[0] == Outcome.OK]
    smoked = driver.smoke(smoked_ok) if smoked_ok else {}
    for step in steps:
        board, version = step.board.name, step.to_version
        st = state.board(board)
        status, message = switched.get(board, NO_RESULT)
        if status == Outcome.OK:
            st.assigned, st.mounted = version, version
            status, message = smoked.get(board, NO_RESULT)
            _record_smoke(state, board, (status, message))
        if status == Outcome.OK:
            st.record_good(version)
            st.phase, st.message = Outcome.ROLLED_BACK.value, ""
            results.append(BoardResult(board, 0, Outcome.ROLLED_BACK, version))
        else:
            st.phase, st.message = status.value, message
            results.append(BoardResult(board, 0, status, st.assigned, message))
        log(f"{board}: {results[-1].outcome} {results[-1].version or ''}")
    state.save()
    return results
