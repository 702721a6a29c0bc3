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
    source: str = "builtin"  # builtin | user:<file> | the stage's (qpu)


@dataclass
class BoardReport:
    board: str
    reachable: bool = True
    error: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    # Each stage's summary: its fields in the board's JSON, in the stages' order.
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # human lines for after the table
    tables: list[Any] = field(default_factory=list)  # stage.Table: shown after the notes
    # Check sources whose checks, all skipped, the table shows as one row (stage.StageResult).
    collapsed: set[str] = field(default_factory=set)

    @property
    def status(self) -> str:
        if not self.reachable:
            return "unreachable"
        if any(c.status == "fail" for c in self.checks):
            return "fail"
        return "pass"

    def table_rows(self) -> list[list[str]]:
        """Rows for the human table: one per check, except that a collapsing stage's checks
        ("<source> <id> <title>") all skipped for a board show as one row with the reason
        ("qpu S0-S11"; JSON and JUnit keep every check)."""
        rows: list[list[str]] = []
        if not self.reachable:
            rows.append([self.board, "reachable", "UNREACHABLE", self.error])
        groups = {s: [c for c in self.checks if c.source == s] for s in self.collapsed}
        collapse = {
            s: g for s, g in groups.items() if len(g) > 1 and all(c.status == "skip" for c in g)
        }
        for c in self.checks:
            group = collapse.get(c.source)
            if group is not None:
                if c is group[0]:
                    ids = f"{c.check.split()[1]}-{group[-1].check.split()[1]}"
                    rows.append([self.board, f"{c.check.split()[0]} {ids}", "SKIP", c.message])
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
                    **b.summary,
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
