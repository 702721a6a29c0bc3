""".ci/setup installs what the demo needs; `--test` adds what only the tests need (issue 40):
the package lists as bash computes them from the real script, and who passes --test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

CI = Path(__file__).resolve().parents[2] / ".ci"
# Everything from the argument check to the package list, without installing anything.
LISTS = """set -euo pipefail
eval "$(sed -n '/^TEST=0/,/^log()/p' "$0" | grep -v '^log()')"
printf '%s\\n' "${APT_PACKAGES[@]}"
"""


def _apt_packages(*args: str) -> subprocess.CompletedProcess[str]:
    setup = str(CI / "setup")
    return subprocess.run(["bash", "-c", LISTS, setup, *args], capture_output=True, text=True)


def test_the_demos_setup_has_no_test_only_packages() -> None:
    demo = _apt_packages()
    assert demo.returncode == 0, demo.stderr
    packages = demo.stdout.split()
    assert "python3-torch" not in packages  # 1.47 GB that only the unit tests use
    assert {"docker.io", "qemu-system-arm", "nfs-ganesha"} <= set(packages)


def test_the_tests_setup_adds_them() -> None:
    test = _apt_packages("--test")
    assert test.returncode == 0, test.stderr
    assert set(test.stdout.split()) == set(_apt_packages().stdout.split()) | {"python3-torch"}


def test_an_unknown_argument_is_named() -> None:
    bad = subprocess.run(["bash", str(CI / "setup"), "--tset"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "usage: bash .ci/setup [--test]  (unknown argument: --tset)"


@pytest.mark.parametrize(("script", "args"), [("test", "--test"), ("run", "--test"), ("demo", "")])
def test_who_asks_for_the_test_packages(script: str, args: str) -> None:
    text = (CI / script).read_text()
    calls = [line.split("#")[0].split() for line in text.splitlines() if ".ci/setup" in line]
    setups = [c[c.index(".ci/setup") + 1 :] for c in calls if ".ci/setup" in c]
    assert setups and all(s == args.split() for s in setups), (script, setups)
