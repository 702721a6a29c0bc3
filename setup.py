"""Ship templates/, playbooks/ and images/ inside the wheel as netroot/data/ (see netroot.paths).

Everything else is in pyproject.toml; an editable install reads them from the checkout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("templates", "playbooks", "images")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        here = Path(__file__).resolve().parent
        data = Path(self.build_lib) / "netroot" / "data"
        for name in SHIPPED:
            target = data / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(here / name, target, ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": BuildPyWithData})
