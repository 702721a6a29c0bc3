"""bench_scale's ratios: per phase and per source tree, of repeated runs the median's."""

from __future__ import annotations

from bench.bench_scale import Phase, ratios


def _run(boards: int, tree: str, cpu: float, wall: float) -> Phase:
    return Phase(boards, "status", cpu, wall, 60.0, 0.0, tree=tree)


def test_ratios_per_tree_from_the_median_run() -> None:
    rows = [
        _run(6, "before", 1.2, 1.1), _run(6, "after", 0.8, 0.9),
        _run(6, "before", 1.2, 1.3), _run(6, "after", 0.9, 2.4),  # a slow outlier
        _run(6, "before", 1.3, 1.2), _run(6, "after", 0.8, 1.0),
        _run(100, "before", 9.0, 9.0), _run(100, "after", 2.2, 3.5),
        _run(100, "before", 9.5, 7.8), _run(100, "after", 2.3, 4.2),
        _run(100, "before", 9.3, 7.5), _run(100, "after", 2.1, 3.3),
    ]  # fmt: skip
    got = {(r["tree"], r["boards"]): r for r in ratios(rows, [6, 100])}
    assert set(got) == {("before", 6), ("before", 100), ("after", 6), ("after", 100)}
    assert (got["after", 6]["cpu_s"], got["after", 6]["wall_s"]) == (0.8, 1.0)
    assert (got["after", 100]["cpu_s"], got["after", 100]["wall_s"]) == (2.2, 3.5)
    assert got["after", 100]["cpu_per_board_ratio"] == round(2.2 / 100 / (0.8 / 6), 2)
    assert got["before", 100]["wall_ratio"] == round(7.8 / 1.2, 2)
    assert got["after", 100]["boards_ratio"] == round(100 / 6, 2)
