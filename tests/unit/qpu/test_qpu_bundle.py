"""The bundled smoke program, run as `python3 -` by the host's own interpreter (stdlib only)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from netroot.qpu import bundle, program
from netroot.qpu.modes import MODES
from netroot.qpu.report import parse

# The system interpreter, not the venv's: the program must need nothing but the stdlib.
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"


def run_bundle(source: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # -I: no PYTHONPATH, no user site, no script dir -- our package cannot leak in.
    return subprocess.run([PYTHON, "-I", "-"], input=source, capture_output=True, text=True,
                          cwd=cwd, timeout=300, check=False)  # fmt: skip


def _has_torch() -> bool:
    probe = [PYTHON, "-c", "import torch"]
    return subprocess.run(probe, capture_output=True, timeout=120, check=False).returncode == 0


# S12-S14 follow S0-S11: with Debian's python3-torch on this machine (.ci/setup --test, which
# .ci/test runs) they run.
TORCH = _has_torch()


def test_emulate_mode_passes_and_says_emulated_everywhere(tmp_path: Path) -> None:
    done = run_bundle(bundle.build_program("emulate"), tmp_path)
    assert done.returncode == 0, done.stderr
    report = parse(done.stdout)
    assert report.mode == "emulate" and report.emulated
    assert [s.status for s in report.stages[:12]] == ["pass"] * 12
    torch_stages = [(s.id, s.status) for s in report.stages[12:]]
    if TORCH:
        assert torch_stages == [("S12", "pass"), ("S13", "pass"), ("S14", "skip")]
        assert "no speed is claimed" in report.stages[14].evidence
        s13 = report.stages[13].evidence
        assert "worst float32 case" in s13
        # Inputs near FLT_MAX: the QPU's saturation and a matvec row whose lanes overflow are
        # named, and S13 still passes.
        assert "add near FLT_MAX: " in s13 and "mul near FLT_MAX: " in s13
        assert "saturated to +-FLT_MAX where torch says +-Inf" in s13
        assert "row 1 outside the bound" in s13 and "(a lane partial overflowed)" in s13
    else:
        assert torch_stages == [("S12", "skip"), ("S13", "skip"), ("S14", "skip")]
    assert report.summary.gflops is None and report.summary.peak_gflops == 38.4
    human = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(human) == 16
    assert all(program.EMULATED in line for line in human)
    assert all(program.EMULATED in s.evidence for s in report.stages)


def test_auto_mode_without_a_videocore_skips_with_the_reason(tmp_path: Path) -> None:
    if os.path.exists("/dev/vcio"):
        pytest.skip("this host has /dev/vcio: auto mode would drive a real VideoCore")
    done = run_bundle(bundle.build_program("auto"), tmp_path)
    assert done.returncode == 0, done.stderr
    report = parse(done.stdout)
    assert {s.status for s in report.stages[:12]} == {"skip"}
    assert report.stages[12].status == ("pass" if TORCH else "skip")  # import needs no GPU
    for later in report.stages[13:]:
        assert later.status == "skip"
        assert later.evidence.startswith("no VideoCore IV" if TORCH else "no torch in this image")
    assert report.stages[0].evidence.startswith("no VideoCore IV on this board")
    assert report.summary.reason.startswith("no VideoCore IV on this board")
    assert not report.emulated and "EMULATED" not in done.stdout


def test_require_mode_without_a_videocore_fails(tmp_path: Path) -> None:
    if os.path.exists("/dev/vcio"):
        pytest.skip("this host has /dev/vcio: require mode would drive a real VideoCore")
    done = run_bundle(bundle.build_program("require"), tmp_path)
    assert done.returncode == 3
    report = parse(done.stdout)
    assert report.stages[0].status == "fail"
    assert "expects a VideoCore IV" in report.stages[0].diagnosis


def test_a_scripted_failure_through_the_bundle(tmp_path: Path) -> None:
    done = run_bundle(bundle.build_program("emulate", scenario="wrong_lanes"), tmp_path)
    assert done.returncode == 3
    stage = {s.id: s for s in parse(done.stdout).stages}["S8"]
    assert stage.status == "fail" and "wrong lanes" in stage.diagnosis


def test_skip_mode_and_what_each_bundle_carries(tmp_path: Path) -> None:
    done = run_bundle(bundle.build_program("skip"), tmp_path)
    assert done.returncode == 0
    assert {s.status for s in parse(done.stdout).stages} == {"skip"}
    hardware = bundle.build_program("auto")
    for module in ("emulator", "emu_decode", "fake"):
        assert f"('netroot.qpu.{module}', " not in hardware
        assert f"('netroot.qpu.{module}', " in bundle.build_program("emulate")
    assert "emulator" not in bundle.module_names("require")
    with pytest.raises(ValueError, match="mode 'fast'"):
        bundle.build_program("fast")


def test_the_bundle_embeds_the_assembled_kernel_words() -> None:
    from netroot.qpu import kernels

    source = bundle.build_program("auto")
    for kernel in kernels.all_kernels().values():
        assert f"0x{kernel.words[0]:016x}" in source
        assert f"0x{kernel.words[-1]:016x}" in source
    json.dumps(source)  # plain text, safe to send over SSH


def test_emulate_and_hardware_programs_carry_the_same_kernel_bytes() -> None:
    def kernel_block(source: str) -> str:
        start = source.index("KERNELS = {")
        return source[start : source.index("}", start)]

    blocks = {mode: kernel_block(bundle.build_program(mode)) for mode in MODES}
    assert len(set(blocks.values())) == 1
