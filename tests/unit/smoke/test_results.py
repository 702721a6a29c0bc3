from __future__ import annotations

import xml.etree.ElementTree as ET

from netroot.errors import Exit
from netroot.smoke.results import BoardReport, CheckResult, SmokeReport


def _report() -> SmokeReport:
    ok = BoardReport("pi-01", checks=[CheckResult("pi-01", "test_python3_runs", "pass")])
    bad = BoardReport(
        "pi-02",
        checks=[
            CheckResult("pi-02", "test_pseudo_filesystems", "fail", "/dev/null missing"),
            CheckResult("pi-02", "test_torch_imports", "skip", "skipped: no torch in image"),
        ],
    )
    down = BoardReport("pi-03", reachable=False, error="pi-03 unreachable: timed out")
    return SmokeReport([ok, bad, down])


def test_exit_code_precedence() -> None:
    report = _report()
    assert report.exit_code() == Exit.CHECKS
    report.boards[1].checks.pop(0)
    assert report.exit_code() == Exit.UNREACHABLE
    report.boards.pop()
    assert report.exit_code() == Exit.OK


def test_json_and_junit_carry_every_check() -> None:
    report = _report()
    data = report.to_dict()
    assert data["status"] == "fail"
    assert [b["status"] for b in data["boards"]] == ["pass", "fail", "unreachable"]
    root = ET.fromstring(report.junit().split("\n", 1)[1])
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert suites["pi-02"].get("failures") == "1" and suites["pi-02"].get("skipped") == "1"
    failure = suites["pi-02"].find("testcase/failure")
    assert failure is not None and failure.get("message") == "/dev/null missing"
    assert suites["pi-03"].find("testcase/error") is not None


def _qpu(board: str, statuses: list[str]) -> list[CheckResult]:
    why = "no VideoCore IV on this board: no /dev/vcio"
    return [
        CheckResult(board, f"qpu S{i} stage {i}", st, why if i < 11 else "nothing to clean up",
                    source="qpu")
        for i, st in enumerate(statuses)
    ]  # fmt: skip


def test_table_collapses_qpu_stages_all_skipped_for_the_same_board() -> None:
    builtin = CheckResult("pi-01", "test_python3_runs", "pass")
    # As the QPU stage leaves a board's report: its checks collapse (stage.StageResult).
    skipped = BoardReport(
        "pi-01", checks=[builtin, *_qpu("pi-01", ["skip"] * 12)], collapsed={"qpu"}
    )
    assert skipped.table_rows() == [
        ["pi-01", "test_python3_runs", "PASS", ""],
        ["pi-01", "qpu S0-S11", "SKIP", "no VideoCore IV on this board: no /dev/vcio"],
    ]
    ran = BoardReport(
        "pi-01", checks=_qpu("pi-01", ["pass"] * 2 + ["skip"] * 10), collapsed={"qpu"}
    )
    assert len(ran.table_rows()) == 12  # a stage that ran keeps every row
    down = BoardReport("pi-03", reachable=False, error="timed out")
    assert down.table_rows() == [["pi-03", "reachable", "UNREACHABLE", "timed out"]]
    whole = SmokeReport([skipped]).to_dict()["boards"][0]["checks"]
    assert len(whole) == 13  # JSON keeps every stage
    # A stage that does not collapse (the testinfra checks) keeps every row, all skipped.
    plain = BoardReport("pi-01", checks=_qpu("pi-01", ["skip"] * 12))
    assert len(plain.table_rows()) == 12
