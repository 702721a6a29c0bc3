from __future__ import annotations

import xml.etree.ElementTree as ET

from netroot.errors import Exit
from netroot.smoke.report import BoardReport, CheckResult, SmokeReport


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
