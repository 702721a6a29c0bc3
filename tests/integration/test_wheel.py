"""A built wheel carries the templates, playbooks and image recipes netroot needs at run time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_wheel_ships_its_data_and_runs_from_it(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis",
    ))  # fmt: skip
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("netroot-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        f"SITE = {str(site)!r}\n"
        "from netroot.paths import project_file as p\n"
        "for parts in [('templates', 'exports.j2'), ('playbooks', 'site.yml'),\n"
        "              ('playbooks', 'ansible.cfg'), ('images', 'board', 'init'),\n"
        "              ('playbooks', 'roles', 'netroot_board', 'action_plugins',\n"
        "               'netroot_reboot.py')]:\n"
        "    f = p(*parts)\n"
        "    assert f.is_file() and str(f).startswith(SITE), f\n"
        "from netroot import templating\n"
        "print('ok')\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
    helped = subprocess.run(
        [sys.executable, "-m", "netroot", "--help"], cwd=tmp_path, env={"PYTHONPATH": str(site)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert helped.returncode == 0 and "rollout" in helped.stdout, helped.stderr[-2000:]
