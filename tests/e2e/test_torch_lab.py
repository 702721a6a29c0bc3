"""PyTorch on a 64-bit lab board (issue 20's Show, issue 40): the torch image rolled out to the
lab's 64-bit board through its group, smoke green with the torch stages EMULATED (the lab has no
VideoCore IV), S12's seconds and NFS operations, S13's cases against the bound; a torch that dies
with SIGILL stopped at the canary; an image without torch shows the torch stages skipped.

Runs on the lab as `netroot lab up` makes it by default: 32-bit boards and, the last, one 64-bit
board (arm64 userspace on a Cortex-A53, a 3B's RAM less gpu_mem) in the group `lab_arm64`, whose
variables say it runs `raspbian-torch`. On the suite's lab (three 32-bit boards) only pi-03
becomes that board, and is a 32-bit board again afterwards; the others keep running.
  flock /tmp/netroot-lab.lock sh -c '.venv/bin/pytest -m e2e tests/e2e/test_torch_lab.py;
    .venv/bin/netroot lab down'
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netroot import paths
from netroot.inventory import load
from tests.e2e.helpers import BASE_IMAGE, netroot, netroot_json

pytestmark = pytest.mark.e2e

TORCH_IMAGE = "netroot-lab/raspbian-torch:bookworm"
SIGILL_IMAGE = "netroot-lab/raspbian-torch:e2e-armv81"
NO_TORCH_IMAGE = "netroot-lab/raspbian-torch:e2e-no-torch"
# A torch built for ARMv8.1 and later, as several aarch64 wheels are: this stand-in, found first
# on sys.path (/usr/local before Debian's /usr/lib/python3), runs one LSE atomic at import:
# LDADD w1, w1, [x0] (0xb8210001), then RET. A Cortex-A53 (ARMv8.0) has no LSE: SIGILL.
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
FAST = ("--yes", "--json")
GROUP = "lab_arm64"  # the lab's 64-bit boards (netroot.lab.render)
NAME = "raspbian-torch"  # their export: the group's netroot_image
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "torch-checks"


def _report(msg: str) -> None:
    print(f"[lab torch] {msg}", flush=True)


@pytest.fixture(scope="module")
def arm64_lab() -> Iterator[Path]:
    """The lab with its last board 64-bit (the default lab's shape); yields its inventory."""
    from netroot.errors import EnvironmentMissing
    from netroot.lab import state
    from netroot.lab.host import service

    try:
        service.check_environment()
    except EnvironmentMissing as exc:
        pytest.skip(f"virtual lab cannot run here: {exc.message} ({exc.hint})")
    before = service.status()
    saved = state.load(paths.lab_dir() / "state.json")
    had = int(saved.get("arm64") or 0) if saved.get("arch", "armhf") == "armhf" else 0
    t0 = time.monotonic()
    service.up(max(2, before.boards_planned), _report, arm64=max(1, had))
    _report(f"lab ready after {time.monotonic() - t0:.1f} s")
    # The server serves every image of the inventory: the 32-bit boards' needs a version
    # before a rollout of the torch image can provision it (a no-op when the suite made one).
    done = netroot(paths.lab_inventory(), "export", BASE_IMAGE, "--name", "raspbian")
    assert done.returncode == 0, done.stderr[-2000:]
    yield paths.lab_inventory()
    if not before.anything_running:
        service.down(_report)
    elif not had:  # the suite's lab: its last board is a 32-bit one again
        service.up(max(1, before.boards_planned), _report)


def sigill_image() -> str:
    """The torch image plus the ARMv8.1 stand-in (built locally, never pulled)."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(
            f"FROM {TORCH_IMAGE}\n"
            "COPY lse.py /usr/local/lib/python3.11/dist-packages/torch/__init__.py\n"
        )
        Path(tmp, "lse.py").write_text(LSE_TORCH)
        subprocess.run(["docker", "build", "--pull=false", "--platform", "linux/arm64", "-q",
                        "-t", SIGILL_IMAGE, tmp], check=True, capture_output=True)  # fmt: skip
    return SIGILL_IMAGE


def no_torch_image() -> str:
    """The same arm64 image with Debian's torch removed (rm runs under qemu-user)."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(
            f"FROM {TORCH_IMAGE}\nRUN rm -rf /usr/lib/python3/dist-packages/torch "
            "/usr/lib/python3/dist-packages/torch-* /usr/lib/python3/dist-packages/functorch "
            "/usr/lib/python3/dist-packages/torchgen\n"
        )
        subprocess.run(["docker", "build", "--pull=false", "--platform", "linux/arm64", "-q",
                        "-t", NO_TORCH_IMAGE, tmp], check=True, capture_output=True)  # fmt: skip
    return NO_TORCH_IMAGE


def _rollout(inv: Path, image: str, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = netroot(inv, "rollout", image, "--name", NAME, "--group", GROUP, *FAST, *extra)
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def _qpu_checks(report: dict[str, Any], board: str) -> dict[str, dict[str, Any]]:
    (entry,) = [b for b in report["boards"] if b["board"] == board]
    return {c["check"].split()[1]: c for c in entry["checks"] if c["check"].startswith("qpu ")}


def test_torch_image_smokes_green_with_the_torch_stages_emulated(arm64_lab: Path) -> None:
    inv = load(arm64_lab)
    boards = sorted(inv.groups[GROUP])
    assert boards and all(inv.boards[b].image == NAME for b in boards)
    # A rollout, not export + provision: the fleet state keeps each board on its assigned
    # version, and a rollout is how a lab moves the boards to a new one.
    rc, result = _rollout(arm64_lab, TORCH_IMAGE, "--canary", "0", "--batch", "100%",
                          "--qpu", "skip")  # fmt: skip
    assert rc == 0, result
    report = netroot_json(arm64_lab, "smoke", GROUP, "--qpu", "emulate")
    assert report["status"] == "pass", report
    for board in boards:
        qpu = _qpu_checks(report, board)
        assert qpu["S12"]["status"] == "pass" and "torch 1.13" in qpu["S12"]["message"]
        assert "NFS operations" in qpu["S12"]["message"]
        assert qpu["S13"]["status"] == "pass"
        assert "worst float32 case" in qpu["S13"]["message"]
        assert qpu["S14"]["status"] == "skip" and "no speed is claimed" in qpu["S14"]["message"]
        assert all("EMULATED" in c["message"] for c in qpu.values())
        # --json keeps what the table shows: every case within its bound, and the import's cost
        (entry,) = [b for b in report["boards"] if b["board"] == board]
        torch = entry["qpu"]["torch"]
        assert torch["cases"] and all(c["ok"] for c in torch["cases"]), torch
        assert {c["op"] for c in torch["cases"]} == {"add", "mul", "matvec"}
        # counted (the board has an NFS client); how many depends on the page cache: after the
        # rollout the version's files are cached, and over NFSv3 with the immutable profile a
        # cached import costs no RPC at all (the lab_arm64 group's mounts)
        assert torch["import_s"] > 0 and torch["nfs"] is not None, torch
        assert torch["nfs"]["retrans"] == 0, torch
        _report(f"{board} S12: {qpu['S12']['message']}")
        _report(f"{board} S13: {qpu['S13']['message']}")
    checks = netroot_json(arm64_lab, "smoke", GROUP, "--qpu", "skip", "--checks", str(EXAMPLES))
    for board in checks["boards"]:
        mine = {c["check"]: c for c in board["checks"]}
        assert mine["test_qpu_product_equals_torch_mul"]["status"] == "pass", mine
        assert mine["test_every_operator_within_the_stated_bound"]["status"] == "pass", mine


def test_a_torch_that_dies_with_sigill_stops_the_rollout_at_the_canary(
    arm64_lab: Path, tmp_path: Path
) -> None:
    inv = tmp_path / "inventory.yml"
    shutil.copy(arm64_lab, inv)
    rc, good = _rollout(inv, TORCH_IMAGE, "--canary", "0", "--batch", "100%", "--qpu", "skip")
    assert rc == 0, good
    before = _mounted(inv)
    rc, result = _rollout(inv, sigill_image(), "--canary", "1", "--batch", "100%")
    assert rc == 1 and result["stopped"], result
    outcomes = {b["board"]: (b["outcome"], b["version"]) for b in result["boards"]}
    canary = result["plan"]["batches"][0][0]["board"]
    assert outcomes[canary] == ("rolled-back", before[canary])
    assert all(o == ("not-reached", before[b]) for b, o in outcomes.items() if b != canary)
    assert "SIGILL" in json.dumps(result), result
    assert _mounted(inv) == before  # the fleet runs what it ran before


def _mounted(inv: Path) -> dict[str, str]:
    proc = netroot(inv, "status", "--json")
    return {b["board"]: b["mounted"] for b in json.loads(proc.stdout)["boards"]}


def test_an_image_without_torch_shows_the_torch_stages_skipped(
    arm64_lab: Path, tmp_path: Path
) -> None:
    inv = tmp_path / "inventory.yml"
    shutil.copy(arm64_lab, inv)
    rc, result = _rollout(inv, no_torch_image(), "--canary", "0", "--batch", "100%",
                          "--qpu", "skip")  # fmt: skip
    assert rc == 0, result
    # --qpu auto, what a rollout's smoke runs: no VideoCore IV here, so S0-S11 skip; S12
    # finds no torch and S12-S14 skip with that reason (never a silent pass).
    report = netroot_json(inv, "smoke", GROUP, "--qpu", "auto")
    assert report["status"] == "pass", report
    for board in sorted(load(inv).groups[GROUP]):
        qpu = _qpu_checks(report, board)
        for stage in ("S12", "S13", "S14"):
            assert qpu[stage]["status"] == "skip", (board, qpu[stage])
            assert "no torch in this image" in qpu[stage]["message"], (board, qpu[stage])
        _report(f"{board} S12: {qpu['S12']['message']}")
