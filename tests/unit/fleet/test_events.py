"""The event log: what a rollout logs, how it reads back, and that it matches the state."""

from __future__ import annotations

import json
from pathlib import Path

from netroot.fleet import events
from netroot.fleet.metrics import render
from netroot.fleet.outcome import Outcome
from netroot.fleet.state import State, load_state
from netroot.fleet.status import BoardStatus
from netroot.fsutil import append_lines, read_log
from netroot.rollout.engine import run_rollout
from netroot.rollout.plan import Count, make_plan
from tests.unit.core.fleetkit import FakeBoards, boards

BOARDS = [f"pi-{i:02d}" for i in range(1, 7)]


def _state(root: Path) -> State:
    state = load_state(root)
    for b in BOARDS:
        st = state.board(b)
        st.assigned = "old"
        st.record_good("old")
    state.save()
    return state


def _logged(root: Path) -> list[events.Event]:
    return events.parse(read_log(root / events.EVENTS_NAME))


def test_a_rollout_logs_each_failed_board_with_its_reason_and_the_rest_on_the_new_version(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    fleet = FakeBoards(BOARDS, "old", bad={"pi-02": "new"}, down=frozenset({"pi-04"}))
    plan = make_plan(
        boards(BOARDS), dict.fromkeys(BOARDS, "old"), "new", canary=1, max_fail=Count(2, False)
    )
    result = run_rollout(plan, state, fleet, "img:2")
    logged = _logged(tmp_path)
    last = events.last_by_board(logged)
    assert last["pi-02"].event == Outcome.ROLLED_BACK.value
    assert "test_user_check failed" in last["pi-02"].reason
    assert last["pi-04"].event == Outcome.UNREACHABLE.value and last["pi-04"].reason == "timed out"
    smokes = [e for e in logged if e.event == events.SMOKE and e.board == "pi-02"]
    assert any("failed: " in e.reason and "test_user_check" in e.reason for e in smokes)
    for board in ("pi-01", "pi-03", "pi-05", "pi-06"):
        assert last[board].event == Outcome.OK.value and last[board].version == "new"
        assert any(e.event == events.GOOD and e.board == board for e in logged)
    rollout = [e for e in logged if e.event == events.ROLLOUT]
    assert rollout[0].reason.startswith("started: img:2 to 6 boards")
    assert not result.stopped and rollout[-1].reason.startswith("completed")
    # Every line is one JSON object with the documented keys.
    for line in read_log(tmp_path / events.EVENTS_NAME).splitlines():
        assert set(json.loads(line)) == {
            "time", "board", "version", "event", "reason", "command", "from"
        }  # fmt: skip


def test_the_log_replayed_gives_every_board_its_recorded_assignment(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = FakeBoards(BOARDS, "old", bad={"pi-03": "new"})
    plan = make_plan(
        boards(BOARDS), dict.fromkeys(BOARDS, "old"), "new", canary=1, max_fail=Count(1, False)
    )
    run_rollout(plan, state, fleet, "img:2")
    replayed: dict[str, str | None] = {}
    for event in _logged(tmp_path):
        if event.event == events.ASSIGNED and event.board:
            replayed[event.board] = event.version
    saved = load_state(tmp_path)
    assert replayed == {b: st.assigned for b, st in saved.boards.items()}


def test_a_save_that_changes_nothing_logs_nothing(tmp_path: Path) -> None:
    state = _state(tmp_path)
    before = len(_logged(tmp_path))
    state.save()
    load_state(tmp_path).save()
    assert len(_logged(tmp_path)) == before


def test_the_log_rotates_at_its_bound_and_reads_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    for i in range(50):
        append_lines(path, [json.dumps({"i": i})], max_bytes=200)
    assert path.stat().st_size <= 200 + 20
    kept = [json.loads(line)["i"] for line in read_log(path).splitlines()]
    assert kept == sorted(kept) and kept[-1] == 49
    assert len(list(tmp_path.iterdir())) == 2  # the log and one older part: bounded


def test_torn_and_foreign_lines_are_skipped_not_fatal() -> None:
    good = events.Event(1.0, "pi-01", "v1", events.ASSIGNED).to_json()
    text = "\n".join(['{"time": 1', "not json", "[]", good, '{"event": "x"}'])
    assert [e.board for e in events.parse(text)] == ["pi-01"]


def test_select_keeps_the_fleets_own_events_beside_one_boards() -> None:
    found = [
        events.Event(1.0, "pi-01", "v", events.ASSIGNED),
        events.Event(2.0, "pi-02", "v", events.ASSIGNED),
        events.Event(3.0, None, "v", events.ROLLOUT, "started"),
    ]
    assert [e.time for e in events.select(found, "pi-01")] == [1.0, 3.0]
    assert [e.time for e in events.select(found, since=2.0)] == [2.0, 3.0]


def _row(board: str, **kw: object) -> BoardStatus:
    base: dict[str, object] = dict(
        board=board, reachable=True, should_run="new", should_run_by="current",
        assigned="new", mounted="new", last_smoke="ok", last_smoke_time=100.0,
        phase="ok", drift="", server="nfs-01",
    )  # fmt: skip
    base.update(kw)
    return BoardStatus(**base)  # type: ignore[arg-type]


def test_metrics_are_prometheus_text_with_escaped_labels(tmp_path: Path) -> None:
    state = _state(tmp_path)
    fleet = FakeBoards(BOARDS, "old", down=frozenset({"pi-04"}))
    plan = make_plan(
        boards(BOARDS), dict.fromkeys(BOARDS, "old"), "new", canary=1, max_fail=Count(1, False)
    )
    run_rollout(plan, state, fleet, "img:2")
    rows = [
        _row("pi-01"),
        _row("pi-04", reachable=False, mounted=None, drift="unknown (unreachable)",
             last_smoke="unreachable"),
        _row('we"ird\\', last_smoke=None, last_smoke_time=None),
    ]  # fmt: skip
    text = render(rows, load_state(tmp_path))
    lines = text.splitlines()
    assert 'netroot_board_up{board="pi-04",server="nfs-01"} 0' in lines
    assert 'netroot_board_in_line{board="pi-04",server="nfs-01"} 0' in lines
    assert 'netroot_board_last_smoke_ok{board="pi-01",server="nfs-01"} 1' in lines
    assert 'netroot_board_up{board="we\\"ird\\\\",server="nfs-01"} 1' in lines
    assert not any(line.startswith('netroot_board_last_smoke_ok{board="we') for line in lines)
    progress = {
        line.split('state="')[1].split('"')[0]: int(line.rsplit(" ", 1)[1])
        for line in lines
        if line.startswith("netroot_rollout_boards{")
    }
    assert progress == {"done": 5, "failed": 1, "remaining": 0}
    # Every family is declared once, before its samples (the text format's rule).
    declared = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(declared) == len(set(declared))
    for line in lines:
        if not line.startswith("#"):
            assert line.split("{")[0] in declared
