"""The engine's budget and rollback logic, against a scripted in-memory fleet.

The real fleet (Ansible + smoke over SSH) is exercised by the e2e rollout tests on the lab.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from netroot.rollout.engine import Outcome, run_rollout
from netroot.rollout.plan import Count, make_plan
from netroot.rollout.state import State, load_state

BOARDS = ["pi-01", "pi-02", "pi-03", "pi-04"]


class ScriptedFleet:
    def __init__(
        self, bad_smoke: frozenset[str] = frozenset(), down: frozenset[str] = frozenset()
    ) -> None:
        self.bad_smoke = bad_smoke
        self.down = down
        self.running: dict[str, str] = {b: "old" for b in BOARDS}
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def switch(self, versions: Mapping[str, str], stagger: float) -> dict[str, Outcome]:
        self.calls.append(("switch", tuple(versions)))
        out: dict[str, Outcome] = {}
        for board, version in versions.items():
            if board in self.down:
                out[board] = ("unreachable", "timed out")
            else:
                self.running[board] = version
                out[board] = ("ok", "")
        return out

    def smoke(self, boards: Sequence[str], versions: Mapping[str, str]) -> dict[str, Outcome]:
        self.calls.append(("smoke", tuple(boards)))
        return {
            b: ("failed", "test_user_check failed")
            if b in self.bad_smoke and self.running[b] == "new"
            else ("ok", "")
            for b in boards
        }


def _state(tmp_path: Path) -> State:
    state = load_state(tmp_path / "inventory.yml")
    for b in BOARDS:
        st = state.board(b)
        st.assigned = "old"
        st.record_good("old")
    return state


def test_all_green(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = ScriptedFleet()
    plan = make_plan(BOARDS, {b: "old" for b in BOARDS}, "new", canary=1, batch=Count(1, False))
    result = run_rollout(plan, state, fleet, "img:2")
    assert result.ok and [r.outcome for r in result.results] == ["ok"] * 4
    assert fleet.running == {b: "new" for b in BOARDS}
    again = load_state(tmp_path / "inventory.yml")
    assert again.rollout is not None and again.rollout.outcome == "completed"
    assert all(again.boards[b].history == ["old", "new"] for b in BOARDS)


def test_failure_spends_budget_rolls_back_and_stops(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = ScriptedFleet(bad_smoke=frozenset({"pi-02"}))
    plan = make_plan(BOARDS, {b: "old" for b in BOARDS}, "new", canary=1)
    result = run_rollout(plan, state, fleet, "img:2")
    outcomes = {r.board: r.outcome for r in result.results}
    assert outcomes == {
        "pi-01": "ok",
        "pi-02": "rolled-back",
        "pi-03": "not-reached",
        "pi-04": "not-reached",
    }
    assert result.stopped and "budget" in result.reason
    assert fleet.running == {"pi-01": "new", "pi-02": "old", "pi-03": "old", "pi-04": "old"}
    assert ("smoke", ("pi-02",)) in fleet.calls[fleet.calls.index(("switch", ("pi-02",))) :]
    assert state.boards["pi-02"].assigned == "old" and state.boards["pi-02"].phase == "rolled-back"


def test_unreachable_board_reported_rest_complete(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = ScriptedFleet(down=frozenset({"pi-03"}))
    plan = make_plan(BOARDS, {b: "old" for b in BOARDS}, "new", canary=1)
    result = run_rollout(plan, state, fleet, "img:2")
    outcomes = {r.board: r.outcome for r in result.results}
    assert outcomes["pi-03"] == "unreachable" and outcomes["pi-04"] == "ok"
    assert not result.stopped
    assert state.boards["pi-03"].last_good == "old"


def test_interrupt_is_recorded_and_resume_skips_done_boards(tmp_path: Path) -> None:
    state = _state(tmp_path)

    class Interrupting(ScriptedFleet):
        def smoke(self, boards: Sequence[str], versions: Mapping[str, str]) -> dict[str, Outcome]:
            if "pi-03" in boards:
                raise KeyboardInterrupt
            return super().smoke(boards, versions)

    fleet = Interrupting()
    plan = make_plan(BOARDS, {b: "old" for b in BOARDS}, "new", canary=1)
    with pytest.raises(KeyboardInterrupt):
        run_rollout(plan, state, fleet, "img:2")
    saved = load_state(tmp_path / "inventory.yml")
    assert saved.rollout is not None and saved.rollout.outcome == "interrupted"
    current = {b: saved.boards[b].last_good for b in BOARDS}
    resumed = make_plan(BOARDS, current, "new", canary=1)
    assert resumed.unchanged == ("pi-01", "pi-02") and resumed.boards == ["pi-03", "pi-04"]
    result = run_rollout(resumed, saved, ScriptedFleet(), "img:2")
    assert result.ok
