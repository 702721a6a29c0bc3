"""A busy board is not a dead board (issue 22): `netroot provision boards` on a lab of six
boards right after `netroot lab up --boards 6`, every board at once, is green.

Six emulated boards on a 2-core machine, some still booting, is the load that once left five of
six "unreachable ... Timeout (12s) waiting for privilege escalation prompt". The module reuses
the e2e lab: it grows it to six boards (the new ones boot now), provisions every board in one
run, and shrinks it back to the lab the other modules expect. Times are printed, never asserted.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import time
from collections.abc import Iterator

import pytest

from netroot.inventory import load
from tests.e2e.conftest import LAB_BOARDS, LabHandle
from tests.e2e.helpers import BASE_IMAGE, export, netroot

pytestmark = pytest.mark.e2e

SIX = 6


@pytest.fixture(scope="module")
def six(lab: LabHandle) -> Iterator[tuple[LabHandle, str]]:
    if subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True).returncode:
        pytest.skip(f"{BASE_IMAGE} not built (netroot lab up builds it)")
    boards_before = max(LAB_BOARDS, len(lab.boards))
    with (lab.lab_dir / ".ganesha.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        version = export(lab.inventory, BASE_IMAGE)
        try:
            yield lab, version
        finally:
            back = ("--boards", str(boards_before), "--arm64", "0")  # the suite's: all 32-bit
            down = netroot(lab.inventory, "lab", "up", *back)
            assert down.returncode == 0, down.stderr[-2000:]


def test_provision_every_board_right_after_lab_up_of_six(six: tuple[LabHandle, str]) -> None:
    lab, version = six
    t0 = time.monotonic()
    up = netroot(lab.inventory, "lab", "up", "--boards", str(SIX), "--arm64", "0")
    assert up.returncode == 0, up.stderr[-3000:]
    t1 = time.monotonic()
    boards = sorted(load(lab.inventory).boards)
    assert len(boards) == SIX
    proc = netroot(lab.inventory, "provision", "boards", "--json")
    t2 = time.monotonic()
    print(f"\n[time] lab up --boards {SIX}: {t1 - t0:.1f} s; provision boards: {t2 - t1:.1f} s")
    result = json.loads(proc.stdout) if proc.stdout.strip() else {}
    assert proc.returncode == 0, (proc.stderr[-4000:], result.get("failures"))
    for board in boards:
        assert result["hosts"][board]["state"] in ("ok", "changed"), result["hosts"][board]
        assert result["mounted"][board], board  # back on a version after its first reboot
    status = json.loads(netroot(lab.inventory, "status", "--json").stdout)["boards"]
    assert {row["board"] for row in status} == set(boards)
    for row in status:  # each board on the version the fleet's rule says, nothing drifting
        assert row["mounted"] == row["should_run"] == result["mounted"][row["board"]], row
        assert row["drift"] == "", row
        if row["should_run_by"] == "current":
            assert row["mounted"] == version, row
    assert result["failures"] == []
