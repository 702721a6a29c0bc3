"""The fault soak's invariant checker on a fake lab state: clean when every invariant holds,
and each invariant broken on its own is reported by name (bench/soak_check.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from bench.soak_check import INVARIANTS, BoardSeen, Seen, ServerSeen, Step, check

V1, V2, V3 = "a" * 12, "b" * 12, "c" * 12


def _event(board: str | None, kind: str, version: str | None) -> str:
    return json.dumps(
        {"time": 1.0, "board": board, "version": version, "event": kind, "reason": "",
         "command": "netroot rollout", "from": None}
    )  # fmt: skip


def _state(**boards: Mapping[str, object]) -> str:
    return json.dumps({"boards": boards, "rollout": None, "saved": 2.0})


def healthy() -> Seen:
    """Two boards on V2 (the state's and the log's), V1 and V2 exported, current V2."""
    boards = (
        BoardSeen("pi-01", powered=True, reachable=True, mounted=V2, runs=True, drift=""),
        BoardSeen("pi-02", powered=True, reachable=True, mounted=V2, runs=True, drift=""),
    )
    kinds = ("assigned", "mounted", "good")
    events = [
        _event(b, kind, v)
        for b, v in (("pi-01", V1), ("pi-01", V2), ("pi-02", V2))
        for kind in kinds
    ]
    fields = {"assigned": V2, "mounted": V2, "last_good": V2, "phase": "ok"}
    return Seen(
        boards=boards,
        servers={"nfs-01": ServerSeen(frozenset({V1, V2}), frozenset({V1, V2}), V2)},
        state_text=_state(**{"pi-01": fields, "pi-02": fields}),
        events_text="\n".join(events) + "\n",
    )


def names(violations: Sequence[object]) -> set[str]:
    return {str(v).split(":", 1)[0] for v in violations}


def test_a_healthy_lab_breaks_nothing() -> None:
    assert check(healthy()) == []
    step = Step("rollout", 0, current_before={"nfs-01": V1}, current_mid={"nfs-01": V2},
                current_after={"nfs-01": V2})  # fmt: skip
    assert check(healthy(), step) == []


def test_a_board_on_nothing_unreachable_or_dead_inside_is_reported() -> None:
    for broken in (
        {"reachable": False},
        {"mounted": None},
        {"runs": False},
        {"mounted": V3},  # not a version its server has
        {"mounted": V1},  # an old one, and status says nothing about it
    ):
        seen = healthy()
        seen = replace(seen, boards=(replace(seen.boards[0], **broken), seen.boards[1]))
        found = check(seen)
        assert names(found) == {"board-runs-a-version"}, broken
        assert "pi-01" in str(found[0])


def test_drift_reported_or_a_board_powered_off_is_not_a_violation() -> None:
    seen = healthy()
    drifting = replace(seen.boards[0], mounted=V1, drift=f"mounted {V1}, should run {V2}")
    assert check(replace(seen, boards=(drifting, seen.boards[1]))) == []
    off = replace(seen.boards[0], powered=False, reachable=False, mounted=None, runs=False)
    assert check(replace(seen, boards=(off, seen.boards[1]))) == []


def test_current_moved_by_a_red_run_or_by_a_command_that_never_moves_it() -> None:
    def moved(op: str, rc: int, rerun_rc: int | None = None) -> Step:
        return Step(op, rc, interrupted=rerun_rc is not None, rerun_rc=rerun_rc,
                    current_before={"nfs-01": V1}, current_mid={"nfs-01": V2},
                    current_after={"nfs-01": V2})  # fmt: skip

    red = moved("rollout", 3)
    assert names(check(healthy(), red)) == {"current-only-on-green"}
    assert "rollout exit 3" in str(check(healthy(), red)[0])
    assert names(check(healthy(), moved("rollback", 0))) == {"current-only-on-green"}
    assert names(check(healthy(), moved("provision", 0))) == {"current-only-on-green"}
    # Moved by the first run, which was killed, though its rerun is green: still a violation.
    killed = moved("rollout", -9, rerun_rc=0)
    assert names(check(healthy(), killed)) == {"current-only-on-green"}
    # Moved by the green rerun of an interrupted rollout: fine.
    rerun = Step("rollout", -9, interrupted=True, rerun_rc=0, current_before={"nfs-01": V1},
                 current_mid={"nfs-01": V1}, current_after={"nfs-01": V2})  # fmt: skip
    assert check(healthy(), rerun) == []


def test_a_version_without_its_manifest_or_a_current_without_its_version() -> None:
    seen = healthy()
    bare = ServerSeen(frozenset({V1, V2, V3}), frozenset({V1, V2}), V2)
    found = check(replace(seen, servers={"nfs-01": bare}))
    assert names(found) == {"version-has-manifest"} and V3 in str(found[0])
    dangling = ServerSeen(frozenset({V1}), frozenset({V1}), V2)
    seen2 = replace(seen, boards=(), servers={"nfs-01": dangling})
    assert names(check(seen2)) == {"version-has-manifest"}


def test_a_lock_left_held() -> None:
    seen = replace(healthy(), locks=("nfs-01 raspbian/.lock: netroot export (pid 42)",))
    found = check(seen)
    assert names(found) == {"no-lock-held"} and "pid 42" in str(found[0])


@pytest.mark.parametrize(
    "state_text",
    ["{not json", json.dumps({"rollout": None})],
)
def test_a_state_that_does_not_parse(state_text: str) -> None:
    assert names(check(replace(healthy(), state_text=state_text))) == {"state-matches-events"}


def test_a_state_the_event_log_does_not_tell() -> None:
    seen = healthy()
    # The log's last assignment of pi-02 is V1 while the state says V2.
    events = seen.events_text + _event("pi-02", "assigned", V1) + "\n"
    found = check(replace(seen, events_text=events))
    assert names(found) == {"state-matches-events"}
    assert "pi-02" in str(found[0]) and "assigned" in str(found[0])
    # A state change with no event at all (pi-02's good version never logged).
    lines = [ln for ln in seen.events_text.splitlines() if not ('"pi-02"' in ln and '"good"' in ln)]
    assert names(check(replace(seen, events_text="\n".join(lines)))) == {"state-matches-events"}
    assert names(check(replace(seen, events_text="{torn"))) == {"state-matches-events"}


def test_an_interrupted_command_not_rerun_or_whose_rerun_fails() -> None:
    assert names(check(healthy(), Step("provision", -9, interrupted=True))) == {"rerun-finishes"}
    failed = Step("provision", 4, interrupted=True, rerun_rc=4)
    found = check(healthy(), failed)
    assert names(found) == {"rerun-finishes"} and "exited 4" in str(found[0])
    assert check(healthy(), Step("provision", 4, interrupted=True, rerun_rc=0)) == []


def _beside(
    op: str,
    rc: int,
    second: str,
    second_rc: int,
    second_rerun_rc: int | None = None,
    moved: bool = True,
    end: str = V1,
) -> Step:
    """`op` with a second control host's `second` beside it; `moved`: current went V1 -> V2
    while both ran; `end`: current after the second one's rerun."""
    mid = {"nfs-01": V2 if moved else V1}
    return Step(op, rc, current_before={"nfs-01": V1}, current_mid=mid, current_after=mid,
                second_op=second, second_rc=second_rc, second_rerun_rc=second_rerun_rc,
                current_end={"nfs-01": end} if second_rerun_rc is not None else {})  # fmt: skip


def test_a_second_control_host_that_moved_current_or_did_not_finish() -> None:
    # A rollback beside a green export: the export moved current, which is its right.
    assert check(healthy(), _beside("rollback", 0, "export", 0)) == []
    # Beside a red export, or a provision: nobody green may have moved it.
    found = check(healthy(), _beside("rollback", 0, "export", 4, second_rerun_rc=0, end=V2))
    assert names(found) == {"current-only-on-green"} and "export exit 4" in str(found[0])
    assert names(check(healthy(), _beside("rollback", 0, "provision", 0))) == {
        "current-only-on-green"
    }
    # The second one refused (busy) needs no rerun; failed otherwise, it does, and must finish.
    assert check(healthy(), _beside("provision", 0, "rollout", 6, moved=False)) == []
    assert check(healthy(), _beside("provision", 0, "rollback", 2, moved=False)) == []
    unfinished = _beside("provision", 0, "rollout", 4, moved=False)
    assert names(check(healthy(), unfinished)) == {"rerun-finishes"}
    red = _beside("provision", 0, "rollout", 4, second_rerun_rc=4, moved=False)
    found = check(healthy(), red)
    assert names(found) == {"rerun-finishes"} and "second control host" in str(found[0])
    # Its rerun moved current: fine when green, a violation when not (it is the last stretch).
    green = _beside("provision", 0, "rollout", 4, second_rerun_rc=0, moved=False, end=V2)
    assert check(healthy(), green) == []
    red_moved = _beside("provision", 0, "rollout", 4, second_rerun_rc=4, moved=False, end=V2)
    assert names(check(healthy(), red_moved)) == {"current-only-on-green", "rerun-finishes"}


def test_every_invariant_has_a_failing_case_above() -> None:
    # The names the checker reports are exactly the documented ones.
    assert set(INVARIANTS) == {
        "board-runs-a-version", "current-only-on-green", "version-has-manifest",
        "no-lock-held", "state-matches-events", "rerun-finishes",
    }  # fmt: skip
