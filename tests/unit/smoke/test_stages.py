"""The smoke's stages as a list of objects: the order, the QPU stage's summary and notes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from netroot import bootmode
from netroot.adapters.ssh import Result, Unreachable
from netroot.errors import UsageError
from netroot.inventory import Board, parse
from netroot.smoke.qpustage import QpuStage
from netroot.smoke.results import BoardReport, SmokeReport
from netroot.smoke.stage import ReadyBoard, SmokeSettings, StageResult
from netroot.smoke.stages import BoardChecks, _record, stages
from netroot.sshtarget import SshTarget
from tests.unit.qpu.test_qpu_runner import FakeSession

INVENTORY = {
    "all": {
        "children": {
            "nfs_servers": {"hosts": {"nfs-01": {"netroot_nfs_address": "10.0.0.1"}}},
            "boards": {"hosts": {"pi-01": {"netroot_address": "10.0.0.11"}}},
        }
    }
}


def _board(qpu: bool = False) -> Board:
    mode = bootmode.of("sd")
    return SimpleNamespace(name="pi-01", mode=mode, qpu=qpu)  # type: ignore[return-value]


def test_the_stages_run_in_one_order_and_a_bad_qpu_mode_is_named_first(tmp_path: Path) -> None:
    inv = parse(INVENTORY, tmp_path / "inventory.yml")
    order = stages(SmokeSettings(), inv, {}, lambda _l: None)
    assert [type(s) for s in order] == [BoardChecks, QpuStage]
    with pytest.raises(UsageError, match="--qpu 'gpu'"):
        stages(SmokeSettings(tmp_path / "missing", "gpu"), inv, {}, lambda _l: None)
    with pytest.raises(UsageError, match=r"--checks .*missing: not a directory"):
        stages(SmokeSettings(tmp_path / "missing"), inv, {}, lambda _l: None)


def test_the_qpu_stage_returns_its_checks_summary_and_the_emulator_note() -> None:
    result = QpuStage("emulate").run_on(ReadyBoard(_board(), FakeSession()))
    assert result.summary["qpu_mode"] == "emulate"
    assert result.summary["qpu"]["emulated"] is True
    assert [c.check.split()[1] for c in result.checks][:3] == ["S0", "S1", "S2"]
    assert all(c.source == "qpu" for c in result.checks)
    assert result.notes == ("QPU stages ran on the EMULATOR; the GPU was not tested",)
    assert result.collapse_skipped and not result.unreachable


def test_auto_is_require_where_the_inventory_says_the_board_has_a_qpu() -> None:
    seen: list[str] = []

    def runner(session: object, board: Board, mode: str) -> tuple[list[object], dict[str, object]]:
        seen.append(mode)
        return [], {"status": "pass"}

    stage = QpuStage("auto", runner)  # type: ignore[arg-type]
    for qpu in (True, False):
        stage.run_on(ReadyBoard(_board(qpu), FakeSession()))
    assert seen == ["require", "auto"]
    skipped = QpuStage("skip", runner).run_on(ReadyBoard(_board(True), FakeSession()))  # type: ignore[arg-type]
    assert skipped == StageResult(summary={"qpu_mode": "skip", "qpu": {}})
    assert seen == ["require", "auto"]  # skip sends nothing


def test_a_board_lost_during_the_qpu_stage_is_unreachable_with_its_mode() -> None:
    class Gone(FakeSession):
        def run(
            self, command: str, stdin: bytes | None = None, timeout: float | None = None
        ) -> Result:
            target = SshTarget("pi-01", "10.0.0.11", None, None, None, None)
            raise Unreachable(target, "Connection reset by peer")

    result = QpuStage("require").run_on(ReadyBoard(_board(), Gone()))
    assert result.unreachable.startswith("pi-01 (")
    report = BoardReport("pi-01")
    report.summary.update(QpuStage().idle)
    _record(report, result)
    board = SmokeReport([report]).to_dict()["boards"][0]
    assert (board["status"], board["qpu_mode"], board["qpu"]) == ("unreachable", "require", {})
    assert list(board) == ["board", "status", "reachable", "error", "qpu_mode", "qpu", "checks"]


def test_a_board_no_stage_reached_keeps_the_idle_fields_in_its_json() -> None:
    report = BoardReport("pi-01", reachable=False, error="timed out")
    for stage in (BoardChecks.__new__(BoardChecks), QpuStage()):
        report.summary.update(stage.idle)
    board = SmokeReport([report]).to_dict()["boards"][0]
    assert board == {
        "board": "pi-01",
        "status": "unreachable",
        "reachable": False,
        "error": "timed out",
        "qpu_mode": "skip",
        "qpu": {},
        "checks": [],
    }


def test_a_torch_boards_qpu_stage_shows_s12_in_a_line_and_s13_as_a_table() -> None:
    torch = {
        "version": "2.1.2",
        "import_s": 3.25,
        "nfs": {"work": 12, "calls": 40},
        "cases": [
            {"op": "add", "dtype": "float32", "shape": [64], "bound_ratio": 0.5, "ok": True},
            {"op": "add", "dtype": "float32", "shape": [4096], "bound_ratio": 0.75, "ok": True},
        ],
    }

    def runner(session: object, board: Board, mode: str) -> tuple[list[object], dict[str, object]]:
        return [], {"status": "pass", "emulated": True, "torch": torch}

    result = QpuStage("emulate", runner).run_on(ReadyBoard(_board(), FakeSession()))  # type: ignore[arg-type]
    assert "import torch 2.1.2: 3.2 s, 12 NFS operations (40 RPC calls)" in result.notes
    (table,) = result.tables
    assert "EMULATED" in table.title and table.rows[0][:3] == ["add", "float32", "0.75"]
    plain = QpuStage("emulate", lambda *a: ([], {"status": "pass"})).run_on(
        ReadyBoard(_board(), FakeSession())
    )
    assert plain.tables == () and plain.notes == ()
