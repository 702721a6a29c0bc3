"""The smoke's stages over real SSH: an sshd host in a network namespace stands in for a netboot
board (its root is "the version"), another address where nothing listens for a board that is
down. The testinfra checks run in their pytest process, then the QPU program (emulated, torch
stages included) through the session the probe opened; the report keeps the stages' order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from netroot.errors import Exit
from netroot.fleet.outcome import Outcome
from netroot.inventory import Inventory, load
from netroot.rollout.drive import AnsibleDriver
from netroot.rollout.plan import Step
from netroot.smoke.stage import SmokeSettings
from netroot.smoke.stages import run_smoke
from tests.integration.provision_hosts import NEEDS_HOSTS, NetnsHost, netns_host

pytestmark = NEEDS_HOSTS


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("board")) as started:
        yield started


def _inventory(host: NetnsHost, tmp_path: Path) -> Inventory:
    v = host.inventory_vars()
    up = {"ansible_host": host.address, "netroot_address": host.address, "netroot_boot": "netboot",
          "netroot_mac": "b8:27:eb:00:00:01", "netroot_serial": "0000abcd"}  # fmt: skip
    down = {"ansible_host": host.spare, "netroot_address": host.spare}
    server = {**v, "ansible_host": host.address, "netroot_nfs_address": host.address}
    data = {"all": {"children": {
        "nfs_servers": {"hosts": {"nfs-t": server}},
        "boards": {"hosts": {"pi-a": {**v, **up}, "pi-b": {**v, **down}}},
    }}}  # fmt: skip
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return load(path)


def test_each_stage_adds_its_checks_and_summary_in_order(host: NetnsHost, tmp_path: Path) -> None:
    inv = _inventory(host, tmp_path)
    expected = {b: {"version": "a" * 16} for b in ("pi-a", "pi-b")}
    report = run_smoke(inv, inv.resolve(["boards"]), SmokeSettings(qpu_mode="emulate"),
                       expected=expected)  # fmt: skip
    doc = report.to_dict()
    up, down = doc["boards"]
    assert list(up) == ["board", "status", "reachable", "error", "qpu_mode", "qpu", "checks"]
    sources = [c["source"] for c in up["checks"]]
    first_qpu = sources.index("qpu")
    assert set(sources[:first_qpu]) == {"builtin"} and set(sources[first_qpu:]) == {"qpu"}
    ids = [c["check"].split()[1] for c in up["checks"][first_qpu:]]
    assert ids == [f"S{i}" for i in range(15)]  # S0-S11, then torch's S12-S14
    assert up["qpu_mode"] == "emulate" and up["qpu"]["emulated"] is True
    emulated, *torch = report.boards[0].notes
    assert emulated == "QPU stages ran on the EMULATOR; the GPU was not tested"
    # Where this host has torch, S12 ran: its line (seconds, NFS operations) follows.
    assert all(line.startswith("import torch ") for line in torch), torch
    # This host is not pi-a: the identity check fails, so the smoke exits 3 (checks failed).
    assert report.exit_code() == Exit.CHECKS
    # A board no stage reached: unreachable, with each stage's idle fields.
    assert (down["status"], down["qpu_mode"], down["qpu"], down["checks"]) == (
        "unreachable",
        "skip",
        {},
        [],
    )
    assert report.boards[1].notes == []


def test_skip_runs_no_qpu_program_and_keeps_the_testinfra_checks(
    host: NetnsHost, tmp_path: Path
) -> None:
    inv = _inventory(host, tmp_path)
    report = run_smoke(inv, inv.resolve(["pi-a"]), SmokeSettings(qpu_mode="skip"))
    board = report.to_dict()["boards"][0]
    assert (board["qpu_mode"], board["qpu"]) == ("skip", {})
    assert board["checks"] and {c["source"] for c in board["checks"]} == {"builtin"}


def test_a_rollouts_smoke_gets_the_boards_the_rollout_was_given(
    host: NetnsHost, tmp_path: Path
) -> None:
    inv = _inventory(host, tmp_path)
    boards = {b.name: b for b in inv.resolve(["boards"])}
    driver = AnsibleDriver(inv, SmokeSettings(qpu_mode="skip"))
    results = driver.smoke(
        [Step(boards["pi-b"], None, "a" * 16), Step(boards["pi-a"], None, "a" * 16)]
    )
    (report,) = driver.smoke_reports
    assert [b.board for b in report.boards] == ["pi-a", "pi-b"]  # inventory order, as before
    assert results["pi-b"][0] == Outcome.UNREACHABLE
    # This host is not pi-a: the identity check fails, and the result names it.
    outcome, message = results["pi-a"]
    assert outcome == Outcome.FAILED and "test_identity_is_the_boards" in message
