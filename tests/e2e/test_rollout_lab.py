"""Lab-wide rollout on the virtual lab (issue 6's Show), in order on a shared lab:

a green rollout with a canary and batches of 1; one board's smoke failing (a user check) stops
at the budget and puts that board back on its old version, smoked green; a board powered off
is reported and the rest complete; the NFS server restarted mid-rollout leaves every board with
a working root; Ctrl-C mid-rollout then the same command again finishes it; rollback; prune
never removes a version a board is assigned to.

Each test works on a copy of the lab inventory in its own directory; the fleet state lives in
the lab's export root, shared with every other copy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netroot.fleet.state import load_state, state_path
from tests.e2e.conftest import LabHandle
from tests.e2e.helpers import BASE_IMAGE, NETROOT, export, netroot, variant_image
from tests.interrupts import sigint_as_at_a_terminal

pytestmark = pytest.mark.e2e

FAST = ("--qpu", "skip", "--yes")
# Where the batch shape is not what a test is about, fewer batches: each batch of an emulated
# board costs its provision and its smoke (about 40 s), and the lab's boards work in parallel.
ONE_BATCH = ("--canary", "0", "--batch", "100%")
AFTER_CANARY = ("--canary", "1", "--batch", "100%")


@pytest.fixture(scope="module")
def inv(lab: LabHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A copy of the lab inventory (own state file), every board on the base image's version."""
    path = tmp_path_factory.mktemp("rollout") / "inventory.yml"
    shutil.copy(lab.inventory, path)
    proc = netroot(path, "rollout", BASE_IMAGE, "--name", "raspbian", "--canary", "0",
                   "--batch", "100%", *FAST)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    yield path


def _rollout(inv: Path, image: str, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = netroot(inv, "rollout", image, "--name", "raspbian", "--json", *FAST, *extra)
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def _outcomes(result: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {b["board"]: (b["outcome"], b["version"]) for b in result["boards"]}


def _status(inv: Path) -> dict[str, dict[str, Any]]:
    proc = netroot(inv, "status", "--json")
    return {b["board"]: b for b in json.loads(proc.stdout)["boards"]}


def test_rollout_canary_then_batches_of_one(lab: LabHandle, inv: Path) -> None:
    version_b = export(lab.inventory, variant_image("e2e-b", "b"))
    rc, result = _rollout(inv, "netroot-lab/raspbian:e2e-b", "--canary", "1", "--batch", "1")
    assert rc == 0, result
    batches = result["plan"]["batches"]
    assert [len(b) for b in batches] == [1, 1, 1] and batches[0][0]["board"] == "pi-01"
    assert _outcomes(result) == {b: ("ok", version_b) for b in lab.boards[:3]}
    status = _status(inv)
    assert all(status[b]["mounted"] == version_b and not status[b]["drift"] for b in status)


def test_board_without_its_mount_is_rolled_out_again(lab: LabHandle, inv: Path) -> None:
    """The state file says pi-03 runs the version; the board says otherwise: the board wins."""
    should = _status(inv)["pi-03"]["mounted"]
    lab.ssh("pi-03", "systemctl stop netroot-mount.service")
    assert _status(inv)["pi-03"]["mounted"] is None
    rc, result = _rollout(inv, "netroot-lab/raspbian:e2e-b")
    assert rc == 0, result
    assert [s["board"] for b in result["plan"]["batches"] for s in b] == ["pi-03"]
    assert sorted(result["plan"]["unchanged"]) == ["pi-01", "pi-02"]
    assert _status(inv)["pi-03"]["mounted"] == should


def test_failing_smoke_stops_at_budget_and_goes_back(
    lab: LabHandle, inv: Path, tmp_path: Path
) -> None:
    before = _status(inv)["pi-02"]["mounted"]
    variant_image("e2e-c", "c")
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_lab_policy.py").write_text(
        "def test_pi02_refuses_image_c(host):\n"
        "    stamp = host.file('/etc/netroot-stamp')\n"
        "    bad = host.backend.get_hostname() == 'pi-02' and stamp.exists and "
        "stamp.content_string.strip() == 'c'\n"
        "    assert not bad, 'pi-02 does not accept image c'\n"
    )
    rc, result = _rollout(inv, "netroot-lab/raspbian:e2e-c", "--checks", str(checks))
    # The rollout stopped: `current` stays where the last green rollout left it.
    assert rc == 1 and result["stopped"] and "budget" in result["reason"]
    outcomes = _outcomes(result)
    assert outcomes["pi-01"][0] == "ok"
    assert outcomes["pi-02"] == ("rolled-back", before)
    assert outcomes["pi-03"] == ("not-reached", before)
    status = _status(inv)
    assert status["pi-02"]["mounted"] == before and status["pi-02"]["last_smoke"] == "ok"
    assert status["pi-03"]["mounted"] == before


def _qemu_pid(lab: LabHandle, board: str) -> int:
    proc = netroot(lab.inventory, "lab", "status", "--json")
    hosts = json.loads(proc.stdout)["hosts"]
    (entry,) = [h for h in hosts if h["name"] == board]
    return int(entry["pid"])


def test_board_powered_off_is_reported_rest_complete(lab: LabHandle, inv: Path) -> None:
    variant_image("e2e-d", "d")
    os.kill(_qemu_pid(lab, "pi-03"), signal.SIGKILL)  # pull the plug
    try:
        # One failure allowed: the unreachable board spends it, the rest complete (one batch:
        # the batch shape is test_rollout_canary_then_batches_of_one's).
        rc, result = _rollout(inv, "netroot-lab/raspbian:e2e-d", "--max-fail", "1", *ONE_BATCH)
        outcomes = _outcomes(result)
        assert rc == 4, result
        assert outcomes["pi-03"][0] == "unreachable"
        assert outcomes["pi-01"][0] == "ok" and outcomes["pi-02"][0] == "ok"
    finally:
        up = netroot(lab.inventory, "lab", "up", "--boards", str(len(lab.boards)), "--arm64", "0")
        assert up.returncode == 0, up.stderr[-2000:]
    rc, result = _rollout(inv, "netroot-lab/raspbian:e2e-d")  # the board is back: finish it
    assert rc == 0 and _outcomes(result)["pi-03"][0] == "ok"


def test_nfs_server_restart_mid_rollout_keeps_every_root(lab: LabHandle, inv: Path) -> None:
    variant_image("e2e-e", "e")

    def restart_server() -> None:
        time.sleep(20)
        lab.ssh("nfs-01", "/usr/local/sbin/netroot-ganesha restart")

    thread = threading.Thread(target=restart_server)
    thread.start()
    # One batch: 20 s in, its boards are mounting the version or being smoked on it.
    rc, result = _rollout(inv, "netroot-lab/raspbian:e2e-e", *ONE_BATCH)
    thread.join()
    assert rc == 0, result
    for board in lab.boards[:3]:
        assert lab.ssh(board, "/usr/local/sbin/netroot-chroot /usr/bin/python3 -c 'print(1)'")


def test_interrupt_then_resume_finishes(lab: LabHandle, inv: Path) -> None:
    version_f = export(lab.inventory, variant_image("e2e-f", "f"))
    env = {**os.environ, "NETROOT_INVENTORY": str(inv), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [*NETROOT, "rollout", "netroot-lab/raspbian:e2e-f", "--name", "raspbian", *FAST,
         *AFTER_CANARY],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_as_at_a_terminal,
    )  # fmt: skip
    # Interrupt once the rollout says the batch after the canary has begun (its own progress
    # line on stderr): the Ctrl-C then lands in that batch's provision, whatever the boards'
    # speed.
    lines: list[str] = []
    next_batch = threading.Event()

    def read_progress() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("batch 1:"):
                next_batch.set()

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    next_batch.wait(timeout=1800)
    assert proc.poll() is None and next_batch.is_set(), "".join(lines)[-3000:]
    assert load_state(lab.export_root).boards["pi-01"].last_good == version_f  # the canary
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=600)
    reader.join(timeout=60)
    assert code == 130, "".join(lines)[-3000:]
    saved = json.loads(state_path(lab.export_root).read_text())
    assert saved["rollout"]["outcome"] == "interrupted"
    rc, result = _rollout(inv, "netroot-lab/raspbian:e2e-f", *AFTER_CANARY)
    assert rc == 0, result
    assert "pi-01" in result["plan"]["unchanged"]
    status = _status(inv)
    assert all(status[b]["mounted"] == version_f for b in lab.boards[:3])


def test_rollback_and_prune_keep_what_boards_run(lab: LabHandle, inv: Path) -> None:
    status = _status(inv)
    previous = load_state(lab.export_root).boards["pi-01"].previous_good()
    assert previous is not None
    proc = netroot(inv, "rollback", "pi-01", "--yes", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _status(inv)["pi-01"]["mounted"] == previous
    running = {status["pi-02"]["mounted"], previous}
    proc = netroot(inv, "prune", "raspbian", "--keep", "1", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    versions = json.loads(netroot(inv, "versions", "raspbian", "--json").stdout)
    kept = {v["version"] for v in versions["versions"]}
    assert running <= kept
