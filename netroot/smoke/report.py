"""The smoke report: per board, per check; exit code and JUnit XML (pure)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from typing import Any

from netroot.errors import Exit, worst


@dataclass(frozen=True)
class CheckResult:
    board: str
    check: str
    status: str  # pass | fail | skip | warn
    message: str = ""
    seconds: float = 0.0
    source: str = "builtin"  # builtin | user:<file> | qpu


@dataclass
class BoardReport:
    board: str
    reachable: bool = True
    error: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    qpu_mode: str = "skip"
    qpu_summary: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if not self.reachable:
            return "unreachable"
        if any(c.status == "fail" for c in self.checks):
            return "fail"
        return "pass"

    def table_rows(self) -> list[list[str]]:
        """Rows for the human table: one per check, except that QPU stages all skipped for a
        board collapse into one row with the reason (JSON and JUnit keep every stage)."""
        rows: list[list[str]] = []
        if not self.reachable:
            rows.append([self.board, "reachable", "UNREACHABLE", self.error])
        qpu = [c for c in self.checks if c.source == "qpu"]
        collapse = len(qpu) > 1 and all(c.status == "skip" for c in qpu)
        for c in self.checks:
            if collapse and c.source == "qpu":
                if c is qpu[0]:
                    stages = f"{c.check.split()[1]}-{qpu[-1].check.split()[1]}"
                    rows.append([self.board, f"qpu {stages}", "SKIP", c.message])
                continue
            rows.append([self.board, c.check, c.status.upper(), c.message])
        return rows


@dataclass
class SmokeReport:
    boards: list[BoardReport]

    def exit_code(self) -> Exit:
        """3 when a check failed, else 4 when a board was unreachable, else 0 (errors.worst)."""
        per_board = {"pass": Exit.OK, "fail": Exit.CHECKS, "unreachable": Exit.UNREACHABLE}
        return worst(per_board[b.status] for b in self.boards)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": {0: "pass", 3: "fail", 4: "unreachable"}[int(self.exit_code())],
            "boards": [
                {
                    "board": b.board,
                    "status": b.status,
                    "reachable": b.reachable,
                    "error": b.error,
                    "qpu_mode": b.qpu_mode,
                    "qpu": b.qpu_summary,
                    "checks": [asdict(c) for c in b.checks],
                }
                for b in self.boards
            ],
        }

    def junit(self) -> str:
        suites = ET.Element("testsuites", name="netroot smoke")
        for b in self.boards:
            suite = ET.SubElement(
                suites,
                "testsuite",
                name=b.board,
                tests=str(max(len(b.checks), 1)),
                failures=str(sum(c.status == "fail" for c in b.checks)),
                errors="0" if b.reachable else "1",
                skipped=str(sum(c.status == "skip" for c in b.checks)),
            )
            if not b.reachable:
                case = ET.SubElement(suite, "testcase", classname=b.board, name="reachable")
                ET.SubElement(case, "error", message=b.error)
            for c in b.checks:
                case = ET.SubElement(
                    suite,
                    "testcase",
                    classname=f"{b.board}.{c.source}",
                    name=c.check,
                    time=f"{c.seconds:.3f}",
                )
                if c.status == "fail":
                    ET.SubElement(case, "failure", message=c.message)
                elif c.status == "skip":
                    ET.SubElement(case, "skipped", message=c.message)
                elif c.message:
                    ET.SubElement(case, "system-out").text = c.message
        ET.indent(suites)
        return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
