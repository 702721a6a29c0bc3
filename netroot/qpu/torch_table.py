"""The torch stages as a person reads them: S13's cases as a short table, S12's import as a line
(pure; `netroot smoke` prints both under its checks, `--json` keeps the data as it came).

S13 checks each operator on many inputs (torchcheck.accuracy); a row here is one operator and
dtype, a column entry one input size with its worst error as a fraction of the documented bound
(docs/torch.md: 1.00 is the bound itself; int32's bound is equality, so it reads "exact").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HEADERS = ["op", "dtype", "worst / bound", "by size (elements or H x W)", "verdict"]


def _size(case: Mapping[str, Any]) -> str:
    shape = "x".join(str(n) for n in case.get("shape") or ())
    layout = case.get("layout", "")
    if layout == "transposed":
        return f"{shape} T"
    if layout == "near FLT_MAX":
        return f"{shape} near FLT_MAX"
    return shape


def _ratio(case: Mapping[str, Any]) -> str:
    ratio = case.get("bound_ratio")
    if case.get("dtype") == "int32":
        return "exact" if case.get("ok") else "WRONG"
    return "?" if ratio is None else f"{float(ratio):.2f}"


def rows(cases: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """One row per operator and dtype, in the order S13 ran them: the worst case over every
    size, each size's worst, and whether all were within the bound."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for case in cases:
        groups.setdefault((str(case.get("op")), str(case.get("dtype"))), []).append(case)
    out = []
    for (op, dtype), group in groups.items():
        ok = all(bool(c.get("ok")) for c in group)
        if dtype == "int32":
            worst = "exact" if ok else "WRONG"
            sizes = f"exact at all {len(group)} sizes" if ok else _sizes(group)
        else:
            ratios = [float(c["bound_ratio"]) for c in group if c.get("bound_ratio") is not None]
            worst = f"{max(ratios):.2f}" if ratios else "?"
            sizes = _sizes(group)
        out.append([op, dtype, worst, sizes, "within" if ok else "OUTSIDE"])
    return out


def _sizes(group: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(f"{_size(c)}: {_ratio(c)}" for c in group)


def title(board: str, emulated: bool) -> str:
    """The table's title: whose it is, what it compares, and EMULATED when it was."""
    where = "EMULATED (netroot's QPU emulator, no GPU)" if emulated else "on the QPU"
    return f"{board}: netroot's torch operators vs torch's CPU, {where}"


def import_line(torch: Mapping[str, Any]) -> str | None:
    """S12 in a line: torch's version, the import's seconds and NFS operations (the smoke
    prints a stage's notes after the board's name)."""
    if "import_s" not in torch:
        return None
    line = f"import torch {torch.get('version', '?')}: {float(torch['import_s']):.1f} s"
    nfs = torch.get("nfs")
    if isinstance(nfs, Mapping):
        return line + f", {nfs.get('work')} NFS operations ({nfs.get('calls')} RPC calls)"
    return line + ", NFS operations not counted"
