"""tools/house_metrics.py reads the purity test's IO list as the test does."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from netroot import bundle
from tests.unit.core import test_purity

ROOT = Path(__file__).resolve().parents[3]


def _metrics() -> ModuleType:
    spec = importlib.util.spec_from_file_location("house_metrics", ROOT / "tools/house_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_board_program_entry_is_what_the_bundle_ships() -> None:
    shipped = (*bundle.CORE_MODULES, *bundle.EMULATE_MODULES, *bundle.TORCH_MODULES)
    assert _metrics().board_program(ROOT) == tuple(f"netroot.qpu.{n}" for n in shipped)


def test_the_metrics_allow_exactly_what_the_purity_test_allows() -> None:
    metrics = _metrics()
    listed = metrics.io_modules(ROOT)
    assert listed == test_purity.IO_MODULES
    assert metrics.expand(ROOT, listed) == test_purity.ALLOWED
    assert metrics.measure(ROOT)["adapter_importers_outside_allowed"] == []
