from __future__ import annotations

from pathlib import Path

from netroot.fleet.desired import Desired, desired, desired_all
from tests.unit.core.fleetkit import inventory


def test_pin_then_assignment_then_current(tmp_path: Path) -> None:
    inv = inventory(tmp_path, tmp_path / "inv.yml", pins={"pi-01": "a" * 12})
    pinned, free = inv.boards["pi-01"], inv.boards["pi-02"]
    assert desired(pinned, "b" * 12, "c" * 12) == Desired("a" * 12, "pin")
    assert desired(free, "b" * 12, "c" * 12) == Desired("b" * 12, "assigned")
    assert desired(free, None, "c" * 12) == Desired("c" * 12, "current")
    assert desired(free, None, None) == Desired(None, "none")


def test_current_read_once_per_image(tmp_path: Path) -> None:
    inv = inventory(tmp_path, tmp_path / "inv.yml")
    reads: list[str] = []

    def current_of(image: str) -> str:
        reads.append(image)
        return "c" * 12

    out = desired_all(inv.boards.values(), {"pi-02": "b" * 12}, current_of)
    assert reads == ["raspbian"]
    assert [out[b].source for b in ("pi-01", "pi-02", "pi-03")] == [
        "current",
        "assigned",
        "current",
    ]
