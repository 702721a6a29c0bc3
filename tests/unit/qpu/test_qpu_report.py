"""The report model parses the program's document and refuses malformed ones."""

from __future__ import annotations

import json
from typing import Any

import pytest

from netroot.qpu import fake, kernels, program
from netroot.qpu.report import ReportError, parse

KERNELS = {k.name: k.words for k in kernels.all_kernels().values()}


def doc(scenario: str = "healthy", mode: str = "emulate") -> dict[str, Any]:
    return program.run(mode, fake.FakeBoard(scenario), KERNELS, madd_iterations=2)


def test_parse_a_passing_emulated_run() -> None:
    report = parse(json.dumps(doc()))
    assert report.emulated and not report.failed
    assert report.stages[10].id == "S10"
    assert report.summary.board and "3B" in report.summary.board
    assert report.summary.v3d_clock_hz == 400_000_000


def test_parse_a_failing_run() -> None:
    report = parse(json.dumps(doc("vc4_owns_v3d", "auto")))
    assert report.failed and report.summary.exit_code == 3


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("stages"), "field 'stages' missing"),
        (lambda d: d["stages"][0].update(status="maybe"), "status 'maybe'"),
        (lambda d: d["summary"].update(exit_code="0"), "field 'exit_code'"),
        (lambda d: d["summary"].update(gflops=12.0), "must not report GPU GFLOPS"),
        (lambda d: d.update(mode="turbo"), "mode 'turbo'"),
        (lambda d: d.update(program="other"), "not a netroot-qpu-smoke document"),
    ],
)
def test_malformed_documents_name_the_field(mutate: Any, message: str) -> None:
    data = doc()
    mutate(data)
    with pytest.raises(ReportError, match=message):
        parse(json.dumps(data))


def test_no_json_at_all() -> None:
    with pytest.raises(ReportError, match="printed no JSON"):
        parse("Traceback (most recent call last):")
