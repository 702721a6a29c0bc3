"""Rollout and rollback end to end over a tmp export root, with in-memory boards.

The plan writes nothing; a run exports without moving `current`, which moves only when every
targeted board ends green; the fleet state lives in the export root, shared by every copy of
the inventory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from netroot.cli.source import open_source
from netroot.export import verbs
from netroot.export.manifest import Layout
from netroot.fleet.outcome import Outcome, Result
from netroot.fleet.rules import Fleet, provision_versions
from netroot.inventory import Inventory
from netroot.remote import lock
from netroot.rollout import runner
from netroot.rollout.plan import Count, Step
from netroot.smoke.results import BoardReport, SmokeReport
from netroot.smoke.stage import SmokeSettings
from tests.unit.core.fleetkit import FakeBoards, inventory, snapshot
from tests.unit.export.tarbuild import Spec, write_tar

BOARDS = ["pi-01", "pi-02", "pi-03"]


def _image(tmp_path: Path, tag: str) -> str:
    specs = [Spec("etc", "d", mode=0o755), Spec("etc/netroot-stamp", data=tag.encode())]
    return str(write_tar(tmp_path / f"{tag}.tar", specs))


def _release(root: Path, source: str) -> str:
    """`netroot export`: a version and `current` on it (a release)."""
    return verbs.export(open_source(source), root, "raspbian").manifest.version


def _fleet(tmp_path: Path, where: str = "ops") -> Fleet:
    home = tmp_path / where
    home.mkdir(exist_ok=True)
    return Fleet(inventory(tmp_path / "root", home / "inventory.yml"))


def _rollout(
    fleet: Fleet, boards: FakeBoards, source: str, dry_run: bool = False, canary: int = 1
) -> runner.RolloutOutcome | runner.PlannedRollout:
    info, apply = open_source(source)
    inv: Inventory = fleet.inventory
    planned = runner.plan_rollout(
        fleet, inv.resolve(["boards"]), info, "raspbian", canary,
        Count(1, False), Count(0, False), 0.0, lambda _m: None, observe=boards.observe,
    )  # fmt: skip
    if dry_run:
        return planned
    with lock.held(fleet.root, "netroot rollout test"):
        return runner.run(
            fleet, planned, source, info, apply, "raspbian", SmokeSettings(qpu_mode="skip"),
            lambda _m: None, engine_fleet=boards,
        )  # fmt: skip


@pytest.fixture
def released(tmp_path: Path) -> tuple[Fleet, FakeBoards, str]:
    """Every board on version A (exported as a release and rolled out green)."""
    fleet = _fleet(tmp_path)
    version_a = _release(fleet.root, _image(tmp_path, "a"))
    boards = FakeBoards(BOARDS, version_a)
    out = _rollout(fleet, boards, _image(tmp_path, "a"))
    assert isinstance(out, runner.RolloutOutcome)
    return fleet, boards, version_a


def test_dry_run_writes_nothing(tmp_path: Path, released: tuple[Fleet, FakeBoards, str]) -> None:
    fleet, boards, version_a = released
    before, calls = snapshot(fleet.root), list(boards.calls)
    planned = _rollout(fleet, boards, _image(tmp_path, "b"), dry_run=True)
    assert isinstance(planned, runner.PlannedRollout)
    assert planned.plan.to_version != version_a and [b.name for b in planned.plan.boards] == BOARDS
    assert snapshot(fleet.root) == before  # no export, staging, state or lock
    assert boards.calls == calls  # no board switched or smoked


def test_planned_version_is_the_exported_one(tmp_path: Path) -> None:
    source = _image(tmp_path, "c")
    info, _ = open_source(source)
    assert verbs.planned_version(info) == _release(tmp_path / "root", source)


def test_failing_canary_leaves_current_and_boards(
    tmp_path: Path, released: tuple[Fleet, FakeBoards, str]
) -> None:
    fleet, boards, version_a = released
    source = _image(tmp_path, "b")
    info, _ = open_source(source)
    version_b = verbs.planned_version(info)
    boards.bad = {"pi-01": version_b}
    out = _rollout(fleet, boards, source)
    assert isinstance(out, runner.RolloutOutcome)
    assert out.result.stopped and not out.released
    assert verbs.current_id(Layout(fleet.root, "raspbian")) == version_a
    assert boards.running == {b: version_a for b in BOARDS}
    # The next provision of every board keeps each on what it should run: A.
    state = fleet.load()
    desired = fleet.desired(fleet.inventory.resolve(["boards"]), state)
    assert provision_versions(desired) == {b: version_a for b in BOARDS}


def test_green_rollout_moves_current_only_at_the_end(
    tmp_path: Path, released: tuple[Fleet, FakeBoards, str]
) -> None:
    fleet, boards, version_a = released
    source = _image(tmp_path, "b")
    seen: list[str | None] = []
    smoke = boards.smoke

    def smoke_and_look(steps: Sequence[Step]) -> dict[str, tuple[Outcome, str]]:
        seen.append(verbs.current_id(Layout(fleet.root, "raspbian")))
        return smoke(steps)

    boards.smoke = smoke_and_look  # type: ignore[method-assign]
    out = _rollout(fleet, boards, source)
    assert isinstance(out, runner.RolloutOutcome) and out.released
    assert seen == [version_a] * 3  # exported, but `current` still A while boards were smoked
    version_b = out.result.results[0].version
    assert verbs.current_id(Layout(fleet.root, "raspbian")) == version_b


def test_unreachable_board_keeps_current(
    tmp_path: Path, released: tuple[Fleet, FakeBoards, str]
) -> None:
    fleet, boards, version_a = released
    boards.down = {"pi-03"}
    out = _rollout(fleet, boards, _image(tmp_path, "b"))
    assert isinstance(out, runner.RolloutOutcome)
    assert out.result.stopped and not out.released
    assert verbs.current_id(Layout(fleet.root, "raspbian")) == version_a


def test_other_inventory_copy_sees_assignments_and_resumes(
    tmp_path: Path, released: tuple[Fleet, FakeBoards, str]
) -> None:
    fleet, boards, version_a = released
    other = _fleet(tmp_path, "ci")
    assert other.load().boards["pi-02"].assigned == version_a
    # A rollout that switched pi-01 but died before its smoke: the other copy resumes it,
    # smoking pi-01 again rather than taking it as done.
    source = _image(tmp_path, "b")
    info, _ = open_source(source)
    version_b = verbs.planned_version(info)
    boards.running["pi-01"] = version_b
    planned = _rollout(other, boards, source, dry_run=True)
    assert (
        isinstance(planned, runner.PlannedRollout)
        and [b.name for b in planned.plan.boards] == BOARDS
    )
    out = _rollout(other, boards, source)
    assert isinstance(out, runner.RolloutOutcome) and out.released
    assert fleet.load().boards["pi-01"].last_good == version_b


def test_rollback_returns_to_previous_good(
    tmp_path: Path, released: tuple[Fleet, FakeBoards, str]
) -> None:
    fleet, boards, version_a = released
    out = _rollout(fleet, boards, _image(tmp_path, "b"))
    assert isinstance(out, runner.RolloutOutcome) and out.released
    pi01 = fleet.inventory.resolve(["pi-01"])
    results = runner.rollback(fleet, pi01, None, lambda _m: None, engine_fleet=boards)
    assert [(r.outcome, r.version) for r in results] == [(Outcome.ROLLED_BACK, version_a)]
    assert fleet.load().boards["pi-01"].assigned == version_a


def test_rerun_with_nothing_left_releases(
    tmp_path: Path, released: tuple[Fleet, FakeBoards, str]
) -> None:
    """The controller died after the last smoke, before moving `current`: a rerun moves it."""
    fleet, boards, version_a = released
    source = _image(tmp_path, "b")
    out = _rollout(fleet, boards, source)
    assert isinstance(out, runner.RolloutOutcome) and out.released
    layout = Layout(fleet.root, "raspbian")
    version_b = verbs.current_id(layout)
    assert version_b is not None
    verbs.switch_current(layout, version_a)  # as if the release never happened
    planned = _rollout(fleet, boards, source, dry_run=True)
    assert isinstance(planned, runner.PlannedRollout) and not planned.plan.batches
    assert runner.release_if_green(fleet, planned, "raspbian")
    assert verbs.current_id(layout) == version_b
    # A board that is not green on it holds the release back.
    fleet_state = fleet.load()
    fleet_state.board("pi-02").last_good = version_a
    fleet_state.save()
    verbs.switch_current(layout, version_a)
    assert not runner.release_if_green(fleet, planned, "raspbian")


def test_plan_prepares_reachable_stock_sd_boards_only(tmp_path: Path) -> None:
    from netroot.bootmode.netboot import NetBoot
    from netroot.bootmode.sd import SdBoot

    fleet = _fleet(tmp_path)
    stock = FakeBoards(BOARDS, None, down=frozenset({"pi-03"}))  # pi-03 unreachable
    planned = _rollout(fleet, stock, _image(tmp_path, "a"), dry_run=True)
    assert isinstance(planned, runner.PlannedRollout)
    assert [[b.name for b in w] for w in planned.plan.prepare] == [["pi-01", "pi-02"]]
    # A netboot board keeps its boot config on its server: nothing to prepare on it.
    assert SdBoot.prepared_before_rollout and not NetBoot.prepared_before_rollout


class ReportingBoards(FakeBoards):
    """Fake boards whose driver keeps each smoke's report, as the real one (AnsibleDriver)."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(names)
        self.smoke_reports: list[SmokeReport] = []

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        out = super().smoke(steps)
        self.smoke_reports.append(SmokeReport([BoardReport(s.board.name) for s in steps]))
        return out


def test_the_outcome_carries_each_smokes_report_the_canarys_first(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    boards = ReportingBoards(BOARDS)
    out = _rollout(fleet, boards, _image(tmp_path, "a"))
    assert isinstance(out, runner.RolloutOutcome) and out.released
    assert [[b.board for b in r.boards] for r in out.smokes] == [["pi-01"], ["pi-02"], ["pi-03"]]
    # A driver that keeps no reports (the plain fake boards): none, not an error.
    again = _rollout(_fleet(tmp_path, "other"), FakeBoards(BOARDS), _image(tmp_path, "b"))
    assert isinstance(again, runner.RolloutOutcome) and again.smokes == ()
