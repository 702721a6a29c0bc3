"""The bundled QPU smoke program under the lab image's own armhf python3 (QEMU user mode).

This is the interpreter the boards run (Debian bookworm armhf python 3.11); `--pull never`
keeps Docker from ever reaching a registry. Skips, saying why, when the image is not built.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from netroot.qpu import bundle, program

IMAGE = "netroot-lab/raspbian:bookworm"

pytestmark = pytest.mark.integration


def _image_present() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True,
                           check=False, timeout=60)  # fmt: skip
    return probe.returncode == 0


@pytest.fixture(scope="module")
def armhf() -> None:
    if not _image_present():
        pytest.skip(f"{IMAGE} is not built here (netroot lab builds it); nothing to run under")


def run_armhf(source: str) -> subprocess.CompletedProcess[str]:
    command = ["docker", "run", "--rm", "-i", "--pull", "never", "--platform", "linux/arm/v7",
               "--network", "none", IMAGE, "python3", "-"]  # fmt: skip
    return subprocess.run(command, input=source, capture_output=True, text=True, check=False,
                          timeout=1800)  # fmt: skip


def test_emulate_mode_under_armhf_python(armhf: None) -> None:
    done = run_armhf(bundle.build_program("emulate"))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["emulated"] is True
    assert [s["status"] for s in doc["stages"]] == ["pass"] * 12 + ["skip"] * 3
    # Debian has no armhf torch: S12-S14 skip, saying so.
    assert all("no torch in this image" in s["evidence"] for s in doc["stages"][12:])
    assert all(program.EMULATED in line for line in done.stderr.splitlines() if line.strip())
    # A 32-bit interpreter numbers the mailbox ioctl for a 32-bit userspace (issue 13).
    assert doc["stages"][1]["evidence"].endswith("ioctl 0xc0046400 (32-bit (armhf) userspace)")


def test_auto_mode_under_armhf_python_skips_without_a_videocore(armhf: None) -> None:
    done = run_armhf(bundle.build_program("auto"))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {s["status"] for s in doc["stages"]} == {"skip"}
    assert doc["summary"]["reason"].startswith("no VideoCore IV on this board")
