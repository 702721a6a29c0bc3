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


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "netroot" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_kind_figures_count_what_they_say(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "nfskind.py": 'NAMES = ("kernel", "ganesha")\n',
            "templating.py": 'T = {"exports.j2": 1}\n',
            "lab/__init__.py": "",
            "lab/plan.py": 'KIND = "ganesha"\n',
            "smoke/__init__.py": '"""the qpu stage: a docstring does not count"""\n',
            "smoke/stages.py": "from netroot.smoke.qpu import QpuStage\n",
            "smoke/qpu.py": "def run_qpu() -> None: ...\n",
            "smoke/report.py": "def f(qpu_mode: str) -> str:\n    return qpu_mode\n",
            "cli/__init__.py": "",
            "cli/smoke_cmd.py": "def smoke(qpu: str) -> None: ...\nclass Fleet: ...\n",
            "rollout/__init__.py": "",
            "rollout/engine.py": "class Fleet: ...\n",
            "rollout/service.py": "",
            "fleet/__init__.py": "",
            "fleet/service.py": "",
            "fleet/remote.py": "",
            "remote/__init__.py": "",
        },
    )
    known = _metrics().modules(root)
    figures = _metrics().kinds_figures(known)
    assert figures["smoke_stage_files"] == ["netroot.smoke.qpu", "netroot.smoke.stages"]
    assert figures["smoke_option_files"] == ["netroot.cli.smoke_cmd", "netroot.smoke.report"]
    assert figures["nfs_kind_modules"] == ["netroot.templating"]
    assert figures["lab_nfs_kind_modules"] == ["netroot.lab.plan"]
    assert figures["fleet_classes"] == ["netroot.cli.smoke_cmd:2", "netroot.rollout.engine:1"]
    assert figures["name_clashes"] == {
        "remote": ["netroot.fleet.remote", "netroot.remote"],
        "service": ["netroot.fleet.service", "netroot.rollout.service"],
    }


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
