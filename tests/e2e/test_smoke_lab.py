"""`netroot smoke` on the lab's boards (issue 5's Show): checks run inside each board's chroot.

The GPU is never tested here: lab boards have no VideoCore IV. `--qpu emulate` runs the
hand-assembled kernel on netroot's emulator inside the chroot, and says so on every line.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import LabHandle
from tests.e2e.helpers import BASE_IMAGE, export, netroot, netroot_json

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def provisioned(lab: LabHandle) -> Iterator[str]:
    """Every board provisioned with the lab image's version; yields that version."""
    version = export(lab.inventory, BASE_IMAGE)
    proc = netroot(lab.inventory, "provision", "boards")
    assert proc.returncode == 0, proc.stderr[-3000:]
    yield version


def _checks(report: dict[str, Any], board: str) -> dict[str, dict[str, Any]]:
    (entry,) = [b for b in report["boards"] if b["board"] == board]
    return {c["check"]: c for c in entry["checks"]}


def test_builtin_checks_pass_on_every_board(
    lab: LabHandle, provisioned: str, tmp_path: Path
) -> None:
    junit = tmp_path / "smoke.xml"
    report = netroot_json(lab.inventory, "smoke", "boards", "--junit", str(junit))
    assert report["status"] == "pass"
    for board in lab.boards[:3]:
        checks = _checks(report, board)
        for name in (
            "test_assigned_version_mounted",
            "test_shared_root_read_only",
            "test_writable_layer_is_the_boards",
            "test_pseudo_filesystems[/dev]",
            "test_pseudo_filesystems[/proc]",
            "test_pseudo_filesystems[/sys]",
            "test_armhf_userspace",
            "test_python3_runs",
            "test_identity_is_the_boards",
            "test_resolver",
        ):
            assert checks[name]["status"] == "pass", (board, name, checks[name]["message"])
        assert checks["test_torch_imports"]["status"] == "skip"
        assert "no torch in image" in checks["test_torch_imports"]["message"]
        qpu = [c for c in checks.values() if c["source"] == "qpu"]
        assert qpu and all(c["status"] in ("skip", "pass") for c in qpu)
        assert any("no VideoCore IV" in c["message"] for c in qpu)
    suites = {s.get("name") for s in ET.parse(junit).getroot().iter("testsuite")}
    assert set(lab.boards[:3]) <= suites


def test_board_without_dev_fails_the_dev_check(lab: LabHandle, provisioned: str) -> None:
    board = "pi-02"
    lab.ssh(board, "umount -l /run/netroot/root/dev")  # the whole rbind tree, as a crash would
    try:
        proc = netroot(lab.inventory, "smoke", board, "--qpu", "skip", "--json")
        assert proc.returncode == 3, proc.stderr[-2000:]
        checks = _checks(json.loads(proc.stdout), board)
        failed = {n for n, c in checks.items() if c["status"] == "fail"}
        assert failed == {"test_pseudo_filesystems[/dev]"}, checks
        message = checks["test_pseudo_filesystems[/dev]"]["message"]
        assert "/dev in the chroot is not the board's /dev (not bound)" in message
    finally:
        repaired = lab.ssh(board, "/usr/local/sbin/netroot-mount", check=False)
    assert repaired.stdout.strip() == "changed", repaired.stderr  # noticed and remounted
    assert netroot(lab.inventory, "smoke", board, "--qpu", "skip").returncode == 0


def test_wrong_version_mounted_fails_the_version_check(
    lab: LabHandle, provisioned: str, tmp_path: Path
) -> None:
    data = yaml.safe_load(lab.inventory.read_text())
    hosts = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    hosts["pi-03"]["netroot_version"] = "0123456789ab"  # pinned to a version it does not run
    pinned = tmp_path / "inventory.yml"
    pinned.write_text(yaml.safe_dump(data))
    proc = netroot(pinned, "smoke", "pi-03", "--qpu", "skip", "--json")
    assert proc.returncode == 3
    checks = _checks(json.loads(proc.stdout), "pi-03")
    assert checks["test_assigned_version_mounted"]["status"] == "fail"
    assert "0123456789ab" in checks["test_assigned_version_mounted"]["message"]


def test_user_checks_run_inside_the_chroot(
    lab: LabHandle, provisioned: str, tmp_path: Path
) -> None:
    (tmp_path / "test_lab_user.py").write_text(
        "def test_os_release(host):\n"
        "    assert host.file('/etc/os-release').contains('bookworm')\n\n"
        "def test_only_pi01_has_marker(host):\n"
        "    assert host.backend.get_hostname() != 'pi-02', 'pi-02 is the odd one out'\n"
    )
    proc = netroot(
        lab.inventory, "smoke", "pi-01", "pi-02", "--qpu", "skip", "--checks", str(tmp_path),
        "--json",
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    one, two = _checks(report, "pi-01"), _checks(report, "pi-02")
    assert one["test_os_release"]["source"] == "user:test_lab_user.py"
    assert one["test_os_release"]["status"] == "pass" and two["test_os_release"]["status"] == "pass"
    assert one["test_only_pi01_has_marker"]["status"] == "pass"
    assert two["test_only_pi01_has_marker"]["status"] == "fail"
    assert "odd one out" in two["test_only_pi01_has_marker"]["message"]


def test_qpu_emulate_says_so_and_passes(lab: LabHandle, provisioned: str) -> None:
    report = netroot_json(lab.inventory, "smoke", "pi-01", "--qpu", "emulate")
    (board,) = report["boards"]
    assert board["qpu"]["emulated"] is True and board["qpu"]["gflops"] is None
    qpu = [c for c in board["checks"] if c["source"] == "qpu"]
    assert qpu and all(c["message"].startswith("EMULATED") for c in qpu)
    assert all(c["status"] in ("pass", "warn", "skip") for c in qpu), qpu
    passed = {c["check"].split()[1] for c in qpu if c["status"] == "pass"}
    assert {"S8", "S9"} <= passed, qpu  # the vector add on 1 QPU and on 12 QPUs


def test_qpu_require_without_videocore_fails(lab: LabHandle, provisioned: str) -> None:
    proc = netroot(lab.inventory, "smoke", "pi-01", "--qpu", "require", "--json")
    assert proc.returncode == 3
    checks = _checks(json.loads(proc.stdout), "pi-01")
    failed = [c for c in checks.values() if c["source"] == "qpu" and c["status"] == "fail"]
    assert failed and "/dev/vcio" in failed[0]["message"]


def test_unreachable_board_is_reported(lab: LabHandle, provisioned: str, tmp_path: Path) -> None:
    data = yaml.safe_load(lab.inventory.read_text())
    hosts = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    ghost = dict(hosts["pi-01"], ansible_host="10.77.0.250", netroot_address="10.77.0.250")
    ghost["netroot_mac"] = "52:54:00:77:00:fa"  # a MAC names one board (the inventory checks)
    hosts["pi-99"] = ghost  # inside the lab's own network, where no board answers
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(data))
    proc = netroot(inv, "smoke", "pi-01", "pi-99", "--qpu", "skip", "--json")
    assert proc.returncode == 4, proc.stderr[-2000:]
    boards = {b["board"]: b for b in json.loads(proc.stdout)["boards"]}
    assert boards["pi-99"]["status"] == "unreachable" and boards["pi-01"]["status"] == "pass"
