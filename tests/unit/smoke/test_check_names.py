"""Check names keep their own parameters but drop testinfra's host parameter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from netroot.smoke.plugin import _check_name


@dataclass
class _Spec:
    id: str


@dataclass
class _Item:
    name: str
    originalname: str
    callspec: Any = None


@pytest.mark.parametrize(
    "spec,want",
    [
        (None, "test_python3_runs"),
        ("pi-02", "test_python3_runs"),
        ("pi-02-/dev", "test_python3_runs[/dev]"),
        ("/dev-pi-02", "test_python3_runs[/dev]"),
        ("/dev", "test_python3_runs[/dev]"),
    ],
)
def test_check_name(spec: str | None, want: str) -> None:
    item = _Item(f"test_python3_runs[{spec}]", "test_python3_runs", spec and _Spec(spec))
    assert _check_name(item, "pi-02") == want  # type: ignore[arg-type]
