"""The smoke program and the torch operators under the lab's arm64 torch image: Debian's
python3-torch 1.13.1 for arm64, the board's own, run through QEMU user mode as a Cortex-A53
(ARMv8.0, a 3B's CPU: QEMU_CPU=cortex-a53). `--pull never` keeps Docker from any registry.
Skips, saying why, when the image is not built (`netroot lab up --arch arm64` builds it).
Every QPU result here is EMULATED: no VideoCore IV.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from netroot.qpu import bundle

IMAGE = "netroot-lab/raspbian-torch:bookworm"
SIGILL_IMAGE = "netroot-lab/raspbian-torch:test-armv81"
NO_TORCH_IMAGE = "netroot-lab/raspbian-torch:test-no-torch"
# The same arm64 image with Debian's torch removed (rm runs under qemu-user: no registry).
NO_TORCH = (
    f"FROM {IMAGE}\n"
    "RUN rm -rf /usr/lib/python3/dist-packages/torch /usr/lib/python3/dist-packages/torch-*"
    " /usr/lib/python3/dist-packages/functorch /usr/lib/python3/dist-packages/torchgen\n"
)
A53 = ("-e", "QEMU_CPU=cortex-a53")  # qemu-user: the CPU model a 3B has, no ARMv8.1 atomics

pytestmark = pytest.mark.integration


def _image_present(image: str = IMAGE) -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                           check=False, timeout=60)  # fmt: skip
    return probe.returncode == 0


@pytest.fixture(scope="module")
def arm64() -> None:
    if not _image_present():
        pytest.skip(f"{IMAGE} is not built here (netroot lab up --arch arm64 builds it)")


def run_arm64(source: str, image: str = IMAGE) -> subprocess.CompletedProcess[str]:
    command = ["docker", "run", "--rm", "-i", "--pull", "never", "--platform", "linux/arm64",
               *A53, "--network", "none", image, "python3", "-"]  # fmt: skip
    return subprocess.run(command, input=source, capture_output=True, text=True, check=False,
                          timeout=1800)  # fmt: skip


def test_emulate_mode_runs_the_torch_stages_on_debians_arm64_torch(arm64: None) -> None:
    done = run_arm64(bundle.build_program("emulate"))
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    stages = {s["id"]: s for s in doc["stages"]}
    assert [s["status"] for s in doc["stages"][:12]] == ["pass"] * 12
    assert stages["S12"]["status"] == "pass" and "torch 1.13" in stages["S12"]["evidence"]
    assert stages["S13"]["status"] == "pass", stages["S13"]
    assert "worst float32 case" in stages["S13"]["evidence"]
    assert stages["S14"]["status"] == "skip" and "no speed is claimed" in stages["S14"]["evidence"]
    assert all("EMULATED" in s["evidence"] for s in doc["stages"])
    # A 64-bit interpreter numbers the mailbox ioctl for a 64-bit userspace.
    assert "0xc0086400" in stages["S1"]["evidence"]


# The stand-in for a torch built for ARMv8.1+: found before Debian's torch, it runs one LSE
# atomic at import (LDADD w1, w1, [x0] = 0xb8210001; RET).
LSE_TORCH = """
import ctypes, mmap
code = (0xB8210001).to_bytes(4, "little") + (0xD65F03C0).to_bytes(4, "little")
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
counter = ctypes.c_int(0)
ctypes.CFUNCTYPE(None, ctypes.c_void_p)(ctypes.addressof(ctypes.c_char.from_buffer(page)))(
    ctypes.addressof(counter))
raise ImportError("this CPU has ARMv8.1 atomics: the SIGILL test image shows nothing here")
"""


def test_a_torch_using_armv81_atomics_is_diagnosed_as_sigill_on_a_cortex_a53(arm64: None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(
            f"FROM {IMAGE}\nCOPY lse.py /usr/local/lib/python3.11/dist-packages/torch/__init__.py\n"
        )
        Path(tmp, "lse.py").write_text(LSE_TORCH)
        subprocess.run(["docker", "build", "--pull=false", "--platform", "linux/arm64", "-q",
                        "-t", SIGILL_IMAGE, tmp], check=True, capture_output=True)  # fmt: skip
    done = run_arm64(bundle.build_program("auto"), SIGILL_IMAGE)
    assert done.returncode == 3, done.stderr[-3000:]
    stages = {s["id"]: s for s in json.loads(done.stdout)["stages"]}
    s12 = stages["S12"]
    assert s12["status"] == "fail" and "killed by SIGILL" in s12["evidence"]
    assert "ARMv8.1" in s12["diagnosis"] and "python3-torch" in s12["remedy"]
    assert stages["S13"]["status"] == "skip" and "blocked by S12" in stages["S13"]["evidence"]


def test_an_arm64_image_without_torch_skips_the_torch_stages_saying_so(arm64: None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(NO_TORCH)
        subprocess.run(["docker", "build", "--pull=false", "--platform", "linux/arm64", "-q",
                        "-t", NO_TORCH_IMAGE, tmp], check=True, capture_output=True)  # fmt: skip
    done = run_arm64(bundle.build_program("emulate"), NO_TORCH_IMAGE)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert [s["status"] for s in doc["stages"]] == ["pass"] * 12 + ["skip"] * 3
    for stage in doc["stages"][12:]:
        assert "no torch in this image" in stage["evidence"], stage
        assert "EMULATED" in stage["evidence"], stage
