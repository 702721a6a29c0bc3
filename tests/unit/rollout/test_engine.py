"""The engine's budget and rollback logic, against a scripted in-memory fleet.

The real fleet (Ansible + smoke over SSH) is exercised by the e2e rollout tests on the lab.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from netroot.fleet.outcome import Outcome, Result
from netroot.fleet.state import State, load_state
from netroot.rollout.engine import run_rollback, run_rollout
from netroot.rollout.plan import Count, Step, make_plan
from tests.unit.core.fleetkit import FakeBoards, boards, names

NAMES = ["pi-01", "pi-02", "pi-03", "pi-04"]
BOARDS = boards(NAMES)
OLD = {b: "old" for b in NAMES}


def _state(tmp_path: Path) -> State:
    state = load_state(tmp_path)
    for b in NAMES:
        st = state.board(b)
        st.assigned = "old"
        st.record_good("old")
    return state


def _outcomes(result: object) -> dict[str, Outcome]:
    return {r.board: r.outcome for r in result.results}  # type: ignore[attr-defined]


def test_all_green(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = FakeBoards(NAMES, "old")
    plan = make_plan(BOARDS, OLD, "new", canary=1, batch=Count(1, False))
    result = run_rollout(plan, state, fleet, "img:2")
    assert result.ok and list(_outcomes(result).values()) == [Outcome.OK] * 4
    assert fleet.running == {b: "new" for b in NAMES}
    again = load_state(tmp_path)
    assert again.rollout is not None and again.rollout.outcome == "completed"
    assert all(again.boards[b].history == ["old", "new"] for b in NAMES)
    assert all(again.boards[b].smoke_status == "ok" for b in NAMES)


def test_failure_spends_budget_rolls_back_and_stops(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = FakeBoards(NAMES, "old", bad={"pi-02": "new"})
    plan = make_plan(BOARDS, OLD, "new", canary=1)
    result = run_rollout(plan, state, fleet, "img:2")
    assert _outcomes(result) == {
        "pi-01": Outcome.OK,
        "pi-02": Outcome.ROLLED_BACK,
        "pi-03": Outcome.NOT_REACHED,
        "pi-04": Outcome.NOT_REACHED,
    }
    assert result.stopped and "budget" in result.reason
    assert fleet.running == {"pi-01": "new", "pi-02": "old", "pi-03": "old", "pi-04": "old"}
    assert ("smoke", ("pi-02",)) in fleet.calls[fleet.calls.index(("switch", ("pi-02",))) :]
    assert state.boards["pi-02"].assigned == "old" and state.boards["pi-02"].phase == "rolled-back"


def test_unreachable_board_counts_as_failed(tmp_path: Path) -> None:
    """ansible/ansible#7686: an unreachable host must spend the budget."""
    state = _state(tmp_path)
    fleet = FakeBoards(NAMES, "old", down=frozenset({"pi-03"}))
    plan = make_plan(BOARDS, OLD, "new", canary=1)  # budget 0
    result = run_rollout(plan, state, fleet, "img:2")
    assert _outcomes(result)["pi-03"] == Outcome.UNREACHABLE
    assert _outcomes(result)["pi-04"] == Outcome.NOT_REACHED
    assert result.stopped and "failure budget spent: 1 failed, 0 allowed" in result.reason
    assert state.boards["pi-03"].assigned == "old" and state.boards["pi-03"].last_good == "old"


def test_unreachable_within_budget_rest_complete(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = FakeBoards(NAMES, "old", down=frozenset({"pi-03"}))
    plan = make_plan(BOARDS, OLD, "new", canary=1, max_fail=Count(1, False))
    result = run_rollout(plan, state, fleet, "img:2")
    assert _outcomes(result)["pi-04"] == Outcome.OK and not result.stopped and not result.ok


def test_batch_where_every_board_fails_stops_with_budget_and_rollback(tmp_path: Path) -> None:
    """ansible/ansible#76915: a batch that fails whole ends in the budget's stop and rollback."""
    state = _state(tmp_path)

    class Aborting(FakeBoards):
        # Ansible aborting the play ("NO MORE HOSTS LEFT"): no result for the batch's boards.
        def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
            if set(names(steps)) == {"pi-02", "pi-03"}:
                return {}
            return super().smoke(steps)

    fleet = Aborting(NAMES, "old")
    plan = make_plan(BOARDS, OLD, "new", canary=1, batch=Count(2, False), max_fail=Count(1, False))
    result = run_rollout(plan, state, fleet, "img:2")
    assert result.stopped and result.reason.startswith("failure budget spent: 2 failed")
    outcomes = _outcomes(result)
    assert outcomes["pi-02"] == outcomes["pi-03"] == Outcome.ROLLED_BACK
    assert outcomes["pi-04"] == Outcome.NOT_REACHED
    assert fleet.running["pi-02"] == fleet.running["pi-03"] == "old"


def test_interrupt_is_recorded_and_resume_skips_done_boards(tmp_path: Path) -> None:
    state = _state(tmp_path)

    class Interrupting(FakeBoards):
        def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
            if "pi-03" in names(steps):
                raise KeyboardInterrupt
            return super().smoke(steps)

    fleet = Interrupting(NAMES, "old")
    plan = make_plan(BOARDS, OLD, "new", canary=1)
    with pytest.raises(KeyboardInterrupt):
        run_rollout(plan, state, fleet, "img:2")
    saved = load_state(tmp_path)
    assert saved.rollout is not None and saved.rollout.outcome == "interrupted"
    current = {b: saved.boards[b].last_good for b in NAMES}
    resumed = make_plan(BOARDS, current, "new", canary=1)
    assert resumed.unchanged == (BOARDS[0], BOARDS[1]) and resumed.boards == BOARDS[2:]
    result = run_rollout(resumed, saved, FakeBoards(NAMES, "old"), "img:2")
    assert result.ok


def test_rollback_switches_then_smokes(tmp_path: Path) -> None:
    state = _state(tmp_path)
    for b in NAMES:
        state.board(b).assigned = "new"
        state.board(b).record_good("new")
    fleet = FakeBoards(NAMES, "new", down=frozenset({"pi-04"}))
    back = [Step(BOARDS[0], None, "old"), Step(BOARDS[3], None, "old")]
    results = run_rollback(state, fleet, back, lambda _m: None)
    assert [(r.board, r.outcome, r.version) for r in results] == [
        ("pi-01", Outcome.ROLLED_BACK, "old"),
        ("pi-04", Outcome.UNREACHABLE, "new"),
    ]
    assert load_state(tmp_path).boards["pi-01"].assigned == "old"


def test_fresh_boards_prepared_before_the_canary_and_a_failed_one_left_to_its_batch(
    tmp_path: Path,
) -> None:
    """Preparing decides nothing: a board it could not reach is switched (and judged) in its
    own batch, against the budget, like any other."""
    state = load_state(tmp_path)
    fleet = FakeBoards(NAMES, None, down=frozenset({"pi-03"}))
    plan = make_plan(BOARDS, {}, "new", canary=1, batch=Count(100, True), max_fail=Count(1, False),
                     fresh=BOARDS)  # fmt: skip
    lines: list[str] = []
    result = run_rollout(plan, state, fleet, "img:2", log=lines.append)
    assert fleet.calls[0] == ("prepare", tuple(NAMES))
    assert fleet.calls[1] == ("switch", ("pi-01",))
    assert "pi-03: not prepared (unreachable: timed out); its batch sets it up" in lines
    assert _outcomes(result) == {
        "pi-01": Outcome.OK, "pi-02": Outcome.OK, "pi-03": Outcome.UNREACHABLE,
        "pi-04": Outcome.OK,
    }  # fmt: skip
    assert ("switch", ("pi-02", "pi-03", "pi-04")) in fleet.calls
