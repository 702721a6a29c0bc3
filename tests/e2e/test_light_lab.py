"""A rollout to a lab of light boards with three boards made to fail (issue 37's Show).

On LIGHT_BOARDS light boards (`lab up --board-kind light`: a container per board, its NFS client
in userspace; 10 in .ci/run, NETROOT_E2E_LIGHT_BOARDS=100 for the classroom), one rollout in
the README's shape (canary 1, then the rest in one batch, a budget of 3 failures), with:
- lb-003 unreachable: its board stopped (sshd gone; the address still answers, refusing);
- lb-005 failing its smoke: a user check that refuses this version on lb-005;
- lb-007 hung mid-boot: its switch reboots it (its inventory asks for another gpu_mem, so the
  role rewrites config.txt) and its boot never reaches sshd (a unit ordered before ssh that
  never finishes), until the role's reboot timeout (shortened for it).
While the rollout waits on lb-007, `status` names lb-007's stage; after it the events name
each of the three with its reason, the metrics show them down or failed, and every other board
runs the new version.

The lab of the suite (QEMU boards) is saved by `lab down` before and resumed after, as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot import paths
from netroot.lab import state
from tests.e2e.helpers import netroot, netroot_while

pytestmark = pytest.mark.e2e

# 10 keeps .ci/run inside its budget; the same test runs a classroom with =100 (up to 100).
LIGHT_BOARDS = int(os.environ.get("NETROOT_E2E_LIGHT_BOARDS", "10"))
BASE = "netroot-lab/light:bookworm"
UNREACHABLE, SMOKE_FAILS, HUNG = "lb-003", "lb-005", "lb-007"
SHAPE = ("--name", "light", "--canary", "1", "--batch", "100%", "--qpu", "skip", "--yes")
HANG_UNIT = """[Unit]
Description=netroot e2e: a boot that never reaches sshd
Before=ssh.service
[Service]
Type=oneshot
ExecStart=/bin/sleep infinity
TimeoutStartSec=infinity
[Install]
RequiredBy=ssh.service
"""


def _report(msg: str) -> None:
    print(f"[light lab] {msg}", flush=True)


@pytest.fixture(scope="module")
def light_lab() -> Iterator[Path]:
    """A lab of LIGHT_BOARDS light boards; the lab that was up before is saved, then resumed."""
    from netroot.errors import EnvironmentMissing
    from netroot.lab import arch
    from netroot.lab.host import service

    try:
        service.check_environment()
    except EnvironmentMissing as exc:
        pytest.skip(f"virtual lab cannot run here: {exc.message} ({exc.hint})")
    before = state.load(paths.lab_dir() / "state.json")
    was_running = service.status().anything_running
    if was_running and before.get("board_kind") != "light":
        service.down(_report)  # saved: `up` below resumes its boards in seconds
    service.up(LIGHT_BOARDS, _report, board_kind="light")
    yield paths.lab_inventory()
    service.down(_report)
    if was_running and before.get("board_kind") != "light":
        service.up(
            int(before.get("boards") or 3),
            _report,
            arch=arch.by_name(str(before.get("arch") or "armhf")),
            netboot=int(before.get("netboot") or 0),
            server_kind=str(before.get("server") or "ganesha"),
            servers=int(before.get("servers") or 1),
            arm64=int(before.get("arm64") or 0),
        )


def _docker(*args: str) -> None:
    subprocess.run(["docker", *args], check=True, capture_output=True, timeout=120)


def _variant(tag: str) -> str:
    """The light image plus a stamp: a new version (built locally)."""
    ref = f"netroot-lab/light:{tag}"
    proc = subprocess.run(
        ["docker", "build", "--pull=false", "-q", "-t", ref, "-"],
        input=f"FROM {BASE}\nRUN echo {tag} > /etc/netroot-stamp\n", text=True,
        capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return ref


def _inventory(lab_inventory: Path, where: Path) -> Path:
    """The lab's inventory, with lb-007's reboot made to happen and to time out sooner."""
    data = yaml.safe_load(lab_inventory.read_text())
    hosts = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    hosts[HUNG]["netroot_gpu_mem"] = 64  # config.txt changes on the switch: a reboot
    hosts[HUNG]["netroot_board_reboot_timeout"] = 60
    path = where / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def _status(inv: Path) -> dict[str, dict[str, Any]]:
    proc = netroot(inv, "status", "--json")
    return {b["board"]: b for b in json.loads(proc.stdout)["boards"]}


def test_a_rollout_with_three_failing_boards(light_lab: Path, tmp_path: Path) -> None:
    first = netroot(light_lab, "rollout", BASE, *SHAPE)
    assert first.returncode == 0, first.stderr[-3000:]
    old = _status(light_lab)[HUNG]["mounted"]
    inv = _inventory(light_lab, tmp_path)
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_classroom_policy.py").write_text(
        "def test_lb005_refuses_this_version(host):\n"
        "    stamp = host.file('/etc/netroot-stamp')\n"
        "    bad = host.backend.get_hostname() == 'lb-005' and stamp.exists and "
        "stamp.content_string.strip() == 'e2e-light-new'\n"
        "    assert not bad, 'lb-005 does not accept e2e-light-new'\n"
    )
    new_image = _variant("e2e-light-new")
    _docker("stop", f"netroot-lab-{UNREACHABLE}")  # powered off: the rollout cannot reach it
    board = f"netroot-lab-{HUNG}"
    subprocess.run(["docker", "exec", "-i", board, "sh", "-c",
                    "cat > /etc/systemd/system/netroot-e2e-hang.service && "
                    "systemctl enable -q netroot-e2e-hang.service"],
                   input=HANG_UNIT, text=True, check=True, timeout=60)  # fmt: skip
    seen: list[str] = []

    def watch(running: Callable[[], bool]) -> None:
        """While the rollout waits on the hung board: what `status` says of it."""
        while running() and not seen:
            proc = netroot(inv, "status")
            line = [x for x in proc.stderr.splitlines() if x.startswith(f"{HUNG}: last seen")]
            if line:
                seen.append(line[0])
            time.sleep(3)

    args = ["rollout", new_image, *SHAPE, "--max-fail", "3", "--checks", str(checks), "--json"]
    proc = netroot_while(inv, args, watch)
    assert proc.stdout, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    outcomes = {b["board"]: (b["outcome"], b["version"]) for b in result["boards"]}
    assert proc.returncode in (1, 4), proc.stderr[-3000:]
    assert outcomes[UNREACHABLE][0] == "unreachable"
    assert outcomes[SMOKE_FAILS][0] == "rolled-back"
    assert outcomes[HUNG][0] in ("unreachable", "failed", "rollback-failed")
    new = outcomes["lb-001"][1]
    assert new != old
    others = [f"lb-{i:03d}" for i in range(1, LIGHT_BOARDS + 1)]
    others = [b for b in others if b not in (UNREACHABLE, SMOKE_FAILS, HUNG)]
    assert all(outcomes[b] == ("ok", new) for b in others), outcomes
    # status, while lb-007 hung: its stage, named
    assert seen and "switching" in seen[0], seen
    status = _status(inv)
    assert all(status[b]["mounted"] == new for b in others), status
    assert not status[UNREACHABLE]["reachable"] and not status[HUNG]["reachable"]
    # the events: each failing board with its reason
    events = [json.loads(x) for x in netroot(inv, "events", "--json").stdout.splitlines() if x]
    last = {e["board"]: e for e in events if e["board"] in (UNREACHABLE, SMOKE_FAILS, HUNG)}
    reasons = {b: " ".join(e["reason"] for e in events if e["board"] == b) for b in last}
    assert "test_lb005_refuses_this_version" in reasons[SMOKE_FAILS], reasons[SMOKE_FAILS]
    assert any(e["event"] == "rolled-back" for e in events if e["board"] == SMOKE_FAILS)
    assert any(e["event"] == "unreachable" and e["reason"]
               for e in events if e["board"] == UNREACHABLE)  # fmt: skip
    assert reasons[HUNG], "lb-007's events give no reason"
    # the metrics: the two boards down, the rollout's failures counted
    metrics = netroot(inv, "metrics").stdout
    up = {x.split('board="')[1].split('"')[0]: x.rsplit(" ", 1)[1]
          for x in metrics.splitlines() if x.startswith("netroot_board_up{")}  # fmt: skip
    assert up[UNREACHABLE] == up[HUNG] == "0" and up[SMOKE_FAILS] == "1", metrics[:3000]
    lines = [x for x in metrics.splitlines() if x.startswith("netroot_rollout_boards{")]
    progress = {x.split('state="')[1].split('"')[0]: x.rsplit(" ", 1)[1] for x in lines}
    assert progress == {"done": str(len(others)), "failed": "3", "remaining": "0"}, progress
    shutil.rmtree(checks)
