from __future__ import annotations

from pathlib import Path

from netroot.fleet import rules
from netroot.fleet.boardfacts import BoardFacts
from netroot.fleet.desired import Desired
from netroot.fleet.state import load_state
from tests.unit.core.fleetkit import inventory

A, B, C = "a" * 16, "b" * 16, "c" * 16


def test_provision_keeps_the_assignment(tmp_path: Path) -> None:
    state = load_state(tmp_path)
    state.board("pi-01").assigned = A
    rules.record_provision(state, {"pi-01": B})  # whatever the run left mounted
    assert state.board("pi-01").assigned == A and state.board("pi-01").mounted == B
    desired = {"pi-01": Desired(A, "assigned"), "pi-02": Desired(C, "current"),
               "pi-03": Desired(None, "none")}  # fmt: skip
    assert rules.provision_versions(desired) == {"pi-01": A, "pi-02": C}
    assert rules.smoke_expectations(desired) == {"pi-01": {"version": A},
                                                   "pi-02": {"version": C}}  # fmt: skip


def test_plan_sources_resume_smokes_a_switched_board_again(tmp_path: Path) -> None:
    state = load_state(tmp_path)
    for b in ("pi-01", "pi-02"):
        state.board(b).record_good(A)
    state.board("pi-02").record_good(B)
    observed = {"pi-01": BoardFacts(B, B), "pi-02": BoardFacts(B, B), "pi-03": None}
    sources = rules.plan_sources(state, observed, B)
    # pi-01 has B mounted but never smoked it green: not "already there".
    assert sources == {"pi-01": A, "pi-02": B, "pi-03": None}


def test_protected_versions_cover_every_rule(tmp_path: Path) -> None:
    inv = inventory(tmp_path, tmp_path / "inv.yml", pins={"pi-03": C})
    state = load_state(tmp_path)
    state.board("pi-01").assigned = A
    state.board("pi-02").record_good(B)
    state.board("pi-02").mounted = "d" * 16
    desired = {"pi-01": Desired(A, "assigned"), "pi-02": Desired("e" * 16, "current"),
               "pi-03": Desired(C, "pin")}  # fmt: skip
    keep = rules.protection_reasons(inv.boards.values(), state, desired, "raspbian")
    assert set(keep) == {A, B, C, "d" * 16, "e" * 16}
    assert keep[C] == ["pinned by pi-03"] and keep["d" * 16] == ["mounted by pi-02"]
    assert rules.protection_reasons(inv.boards.values(), state, desired, "other") == {}


def test_adopt_observed_takes_what_ran_before_netroot(tmp_path: Path) -> None:
    state = load_state(tmp_path)
    state.board("pi-02").record_good(A)
    rules.adopt_observed(state, {"pi-01": BoardFacts(B, B), "pi-02": BoardFacts(B, B)})
    assert state.board("pi-01").last_good == B and state.board("pi-01").assigned == B
    assert state.board("pi-02").last_good == A  # a recorded good version is not overwritten


def test_smoke_results_recorded_in_the_rollout_vocabulary(tmp_path: Path) -> None:
    from netroot.smoke.results import BoardReport, CheckResult, SmokeReport

    fleet = rules.Fleet(inventory(tmp_path / "root", tmp_path / "inv.yml"))
    failing = BoardReport("pi-02", checks=[CheckResult("pi-02", "test_x", "fail", "no")])
    down = BoardReport("pi-03", reachable=False, error="timed out")
    report = SmokeReport([BoardReport("pi-01"), failing, down])
    results = [(b.board, b.status, b.reachable) for b in report.boards]
    # No export root on this host: nothing written, and the reason says so.
    assert "not on this host" in fleet.record_smoke_results("netroot smoke", results)
    assert not (tmp_path / "root").exists()
    (tmp_path / "root").mkdir()
    assert fleet.record_smoke_results("netroot smoke", results) == ""
    boards = fleet.load().boards
    assert [boards[b].smoke_status for b in ("pi-01", "pi-02", "pi-03")] == [
        "ok",
        "failed",
        "unreachable",
    ]


def test_smoke_results_wait_for_no_writer(tmp_path: Path) -> None:
    """A smoke records under the writer's lock: while a rollout holds it, nothing is written
    (the rollout's saves are not undone) and the reason names the holder."""
    from netroot.remote import lock

    root = tmp_path / "root"
    fleet = rules.Fleet(inventory(root, tmp_path / "inv.yml"))
    with lock.held(root, "netroot rollout x"):
        why = fleet.record_smoke_results("netroot smoke", [("pi-01", "pass", True)])
    assert "netroot rollout x" in why
    assert "pi-01" not in fleet.load().boards
    assert fleet.record_smoke_results("netroot smoke", [("pi-01", "pass", True)]) == ""
    assert fleet.load().boards["pi-01"].smoke_status == "ok"
    assert lock.read_holder(root) is None  # released after the write


def test_writing_saves_only_a_changed_state_and_never_in_check_mode(tmp_path: Path) -> None:
    root = tmp_path / "root"
    fleet = rules.Fleet(inventory(root, tmp_path / "inv.yml"))
    with fleet.writing("netroot provision --check", check=True) as state:
        rules.record_provision(state, {"pi-01": A})
    assert not (root / ".netroot-fleet.json").exists()
    with fleet.writing("netroot provision") as state:
        pass
    assert not (root / ".netroot-fleet.json").exists()  # nothing recorded: nothing written
    with fleet.writing("netroot provision") as state:
        rules.record_provision(state, {"pi-01": A})
    assert fleet.load().boards["pi-01"].mounted == A
