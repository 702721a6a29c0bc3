"""The torch stages as a person reads them (netroot.qpu.torch_table): S13's cases grouped into
a row per operator and dtype, S12's import in a line."""

from __future__ import annotations

from typing import Any

from netroot.qpu import torch_table


def _case(op: str, dtype: str, shape: list[int], ratio: float | None, ok: bool = True,
          layout: str = "contiguous") -> dict[str, Any]:  # fmt: skip
    return {"op": op, "dtype": dtype, "shape": shape, "layout": layout, "bound_ratio": ratio,
            "ok": ok}  # fmt: skip


CASES = [
    _case("add", "float32", [1], 1.0),
    _case("add", "int32", [1], 0.0),
    _case("add", "float32", [1000], 0.5),
    _case("add", "int32", [1000], 0.0),
    _case("matvec", "float32", [1, 1], 0.6612),
    _case("matvec", "float32", [33, 200], 0.0412),
    _case("matvec", "float32", [6, 19], 0.02, layout="transposed"),
    _case("add", "float32", [64], 0.0, layout="near FLT_MAX"),
]


def test_a_row_per_operator_and_dtype_with_the_worst_size_first_and_each_size_after() -> None:
    rows = torch_table.rows(CASES)
    assert [r[:3] for r in rows] == [
        ["add", "float32", "1.00"],
        ["add", "int32", "exact"],
        ["matvec", "float32", "0.66"],
    ]
    assert rows[0][3] == "1: 1.00, 1000: 0.50, 64 near FLT_MAX: 0.00"
    assert rows[1][3] == "exact at all 2 sizes"
    assert rows[2][3] == "1x1: 0.66, 33x200: 0.04, 6x19 T: 0.02"
    assert {r[4] for r in rows} == {"within"}


def test_a_case_outside_its_bound_marks_its_row() -> None:
    wrong = [
        _case("mul", "float32", [17], 2.0, ok=False),
        _case("mul", "int32", [17], None, ok=False),
    ]
    bad = [*CASES, *wrong]
    rows = {(r[0], r[1]): r for r in torch_table.rows(bad)}
    assert rows[("mul", "float32")][2:] == ["2.00", "17: 2.00", "OUTSIDE"]
    assert rows[("mul", "int32")][2:] == ["WRONG", "17: WRONG", "OUTSIDE"]
    assert rows[("add", "float32")][4] == "within"


def test_the_title_says_emulated_and_the_import_line_its_nfs_operations() -> None:
    assert "EMULATED" in torch_table.title("pi-03", True)
    assert "EMULATED" not in torch_table.title("pi-03", False)
    torch = {"version": "1.13.0a0", "import_s": 34.51, "nfs": {"work": 2178, "calls": 3368}}
    line = torch_table.import_line(torch)
    assert line == "import torch 1.13.0a0: 34.5 s, 2178 NFS operations (3368 RPC calls)"
    local = torch_table.import_line({"version": "1.13.0a0", "import_s": 2.0, "nfs": None})
    assert local is not None and local.endswith("NFS operations not counted")
    assert torch_table.import_line({"cases": []}) is None
