"""Two NFS servers, one fleet: remote export roots on two real sshd hosts (network namespaces).

At the Fleet level, as the CLI drives it (the runner, the engine, the export to each server
through its own helper session and rsync, the state and the lock on the fleet home, each
server's own `current`); the boards are the unit tests' in-memory FakeBoards (real boards on
two server machines: the lab's e2e). One server is stopped (its sshd: connections refused)
before the export, or while the boards are smoked: its boards fail within the budget, the
other server's complete, and the rerun once it is back finishes the job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from netroot.cli.source import open_source
from netroot.fleet.outcome import Outcome, Result
from netroot.fleet.rules import Fleet
from netroot.fleet.where import RemoteRoot
from netroot.remote.fleet import STATE_NAME
from netroot.remote.lock import LOCK_NAME
from netroot.rollout import runner
from netroot.rollout.plan import Count, Step
from tests.integration.provision_hosts import (
    NEEDS_RSYNC,
    NetnsHost,
    start_sshd,
    stop_sshd,
)
from tests.unit.core import fleetkit as kit
from tests.unit.core.fleetkit import FakeBoards

pytestmark = NEEDS_RSYNC
BOARDS = {"pi-01": "nfs-01", "pi-02": "nfs-01", "pi-03": "nfs-02", "pi-04": "nfs-02"}


class Site:
    def __init__(self, hosts: dict[str, NetnsHost], tmp: Path) -> None:
        self.hosts, self.tmp = hosts, tmp
        self.roots = {name: tmp / f"root-{name}" for name in hosts}
        servers = {
            name: {
                "ansible_host": host.address,
                "netroot_export_remote": True,
                "netroot_export_root": str(self.roots[name]),
                "netroot_nfs_server_lib_dir": str(tmp / f"lib-{name}"),
                **host.inventory_vars(),
            }
            for name, host in hosts.items()
        }
        # Never contacted (FakeBoards stand in): TEST-NET addresses.
        boards = {
            b: {"ansible_host": f"192.0.2.{10 + i}", "netroot_image": "raspbian",
                "netroot_nfs_server": s}
            for i, (b, s) in enumerate(BOARDS.items())
        }  # fmt: skip
        self.data = {
            "all": {"children": {"nfs_servers": {"hosts": servers}, "boards": {"hosts": boards}}}
        }
        self.opened: list[Fleet] = []

    def control(self, name: str, monkeypatch: pytest.MonkeyPatch) -> Fleet:
        fleet: Fleet = kit.open_control(self.tmp, name, self.data, monkeypatch)
        self.opened.append(fleet)
        return fleet

    def current(self, server: str) -> str | None:
        return kit.current_link(self.roots[server])

    def image(self, tag: str) -> str:
        return kit.stamped_image(self.tmp, tag)


@pytest.fixture
def site(hosts: dict[str, NetnsHost], tmp_path: Path) -> Iterator[Site]:
    s = Site(hosts, tmp_path)
    yield s
    for fleet in s.opened:
        for root in fleet.roots.values():
            assert isinstance(root, RemoteRoot)
            root.close()
    for host in hosts.values():  # a test that failed half-way leaves no server down
        if host.exec("bash", "-c", f"echo > /dev/tcp/{host.address}/22", check=False).returncode:
            start_sshd(host)


def _rollout(
    fleet: Fleet, boards: FakeBoards, source: str, max_fail: str = "0", log: list[str] | None = None
) -> runner.RolloutOutcome:
    out: runner.RolloutOutcome = kit.rollout(
        fleet, boards, source, batch=2, max_fail=max_fail, log=log
    )
    return out


def test_a_rollout_goes_to_each_boards_own_server_and_releases_on_both(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = site.control("ctl-a", monkeypatch)
    assert fleet.inventory.server.name == "nfs-01"  # the fleet home: the first server
    out = _rollout(fleet, FakeBoards(list(BOARDS), None), site.image("a"))
    version = out.result.results[0].version
    assert out.released and all(r.outcome == Outcome.OK for r in out.result.results)
    assert site.current("nfs-01") == site.current("nfs-02") == version
    for root in site.roots.values():  # verified and committed on each server, by its helper
        assert (root / "raspbian" / "versions" / f"{version}.json").is_file()
    # One fleet: the state and the lock on the home only.
    assert (site.roots["nfs-01"] / STATE_NAME).is_file()
    assert not (site.roots["nfs-02"] / STATE_NAME).exists()
    assert not (site.roots["nfs-02"] / LOCK_NAME).exists()  # taken only to release, then freed
    # Another control host sees the same fleet (each board's own server's current).
    other = site.control("ctl-b", monkeypatch)
    wanted = other.desired(other.inventory.resolve(["boards"]), other.load())
    assert {d.version for d in wanted.values()} == {version}


def test_a_server_down_at_the_export_fails_its_boards_and_a_rerun_finishes(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = site.control("ctl-a", monkeypatch)
    boards = FakeBoards(list(BOARDS), None)
    a = _rollout(fleet, boards, site.image("a")).result.results[0].version
    stop_sshd(site.hosts["nfs-02"])
    log: list[str] = []
    out = _rollout(fleet, boards, site.image("b"), max_fail="2", log=log)
    outcomes = {r.board: r.outcome for r in out.result.results}
    assert outcomes == {"pi-01": Outcome.OK, "pi-02": Outcome.OK,
                        "pi-03": Outcome.UNREACHABLE, "pi-04": Outcome.UNREACHABLE}  # fmt: skip
    assert any("nfs-02: the export failed" in line and "ssh" in line for line in log), log
    assert not out.result.stopped and not out.released
    b = out.result.results[0].version
    assert site.current("nfs-01") == site.current("nfs-02") == a  # nothing released
    assert b and not (site.roots["nfs-02"] / "raspbian" / "versions" / b).exists()
    start_sshd(site.hosts["nfs-02"])
    again = _rollout(fleet, boards, site.image("b"), max_fail="2")
    assert again.released and {r.board for r in again.result.results} == {"pi-03", "pi-04"}
    assert site.current("nfs-01") == site.current("nfs-02") == b


class StopsServer(FakeBoards):
    """Boards whose second server goes down while the last batch is smoked."""

    def __init__(self, names: Sequence[str], running: str | None, host: NetnsHost) -> None:
        super().__init__(names, running)
        self.host, self.smokes = host, 0

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        self.smokes += 1
        if self.smokes == 3:
            stop_sshd(self.host)
        return super().smoke(steps)


def test_a_server_down_during_the_rollout_is_released_by_the_rerun(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = site.control("ctl-a", monkeypatch)
    a = _rollout(fleet, FakeBoards(list(BOARDS), None), site.image("a")).result.results[0].version
    boards = StopsServer(list(BOARDS), a, site.hosts["nfs-02"])
    log: list[str] = []
    out = _rollout(fleet, boards, site.image("b"), log=log)
    b = out.result.results[0].version
    assert all(r.outcome == Outcome.OK for r in out.result.results)  # the boards are fine
    assert not out.released, "nfs-02 was down: `current` cannot move there"
    assert any(line.startswith("nfs-02: ") and "current not moved" in line for line in log), log
    assert site.current("nfs-02") == a
    start_sshd(site.hosts["nfs-02"])
    # The rerun: every board already runs b, smoked green; only the release is left.
    fresh = site.control("ctl-a", monkeypatch)
    info, _apply = open_source(site.image("b"))
    planned = runner.plan_rollout(
        fresh, fresh.inventory.resolve(["boards"]), info, "raspbian", 1, Count(2, False),
        Count(0, False), 0.0, lambda _m: None, observe=boards.observe,
    )  # fmt: skip
    assert not planned.plan.batches
    with fresh.locked("netroot rollout test"):
        assert runner.release_if_green(fresh, planned, "raspbian")
    assert site.current("nfs-01") == site.current("nfs-02") == b


def test_versions_and_export_from_the_cli_on_each_server(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = site.control("ctl-a", monkeypatch)
    a = _rollout(fleet, FakeBoards(list(BOARDS), None), site.image("a")).result.results[0].version
    stop_sshd(site.hosts["nfs-02"])
    work = site.tmp / "ctl-a"
    env = {**os.environ, "NETROOT_CACHE": str(work / "cache"), "NO_COLOR": "1"}
    cli = [sys.executable, "-m", "netroot", "-i", str(work / "inventory.yml")]
    done = subprocess.run([*cli, "versions", "raspbian", "--json"], env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 4, done.stderr  # nfs-02 unreachable: named, after nfs-01's answer
    listed: dict[str, Any] = json.loads(done.stdout)
    assert listed["servers"]["nfs-01"] == {"current": a, "versions": [a]}
    assert "ssh" in listed["servers"]["nfs-02"]["error"]
    assert [v["servers"] for v in listed["versions"]] == [["nfs-01"]]
    assert "listing raspbian failed on nfs-02" in done.stderr
    start_sshd(site.hosts["nfs-02"])
    done = subprocess.run([*cli, "versions", "raspbian", "--json"], env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [v["servers"] for v in listed["versions"]] == [["nfs-01", "nfs-02"]]
    # A release from the CLI: to both servers at once, each verified and switched there.
    done = subprocess.run([*cli, "export", site.image("c"), "--name", "raspbian", "--json"],
                          env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    assert all(r["ok"] and r["switched"] and r["bytes_sent"] > 0 for r in out["servers"].values())
    assert site.current("nfs-01") == site.current("nfs-02") == out["version"]
