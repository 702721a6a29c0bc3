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


def test_where_branches_and_tree_rules_are_found_by_their_shapes(tmp_path: Path) -> None:
    pkg = tmp_path / "netroot"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "import os\n"
        "def f(server, servers, layout, found):\n"
        "    if server.remote:\n"  # 3
        "        pass\n"
        "    x = 1 if server is not None else 2\n"  # 5
        "    if len(servers) >= 2:\n"  # 6
        "        pass\n"
        "    if server.state == 'ok':\n"  # not a where branch
        "        pass\n"
        "    os.chmod(layout.base, 0o700)\n"
        "    return sorted(found, key=lambda m: m.exported_at)\n"
        "def commit(layout, staging, final, m):\n"
        "    os.rename(staging, final)\n"
        "    os.rename(m, layout.manifest_path('v'))\n"
    )
    (pkg / "b.py").write_text(
        "import os\n"
        "def g(layout):\n"
        "    layout.base.mkdir(mode=0o700)\n"
        "    for child in layout.staging.iterdir():\n"
        "        pass\n"
        "    found = [(p.stat().st_mtime_ns, p.name) for p in layout.versions.iterdir()]\n"
        "    return sorted(found)\n"
    )
    figures = _metrics().measure(tmp_path)
    assert figures["where_branches"] == ["netroot.a:3", "netroot.a:5", "netroot.a:6"]
    assert figures["tree_rules_homes"] == {
        "base mode": "netroot.a netroot.b",
        "stale-staging cleanup": "netroot.b",
        "two-rename commit": "netroot.a",
        "newest (prune's order)": "netroot.a netroot.b",
    }
    assert set(figures["tree_rules_twice"]) == {"base mode", "newest (prune's order)"}
