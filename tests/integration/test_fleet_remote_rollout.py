"""A rollout on a remote export root, at the Fleet level: the runner and the engine as the CLI
drives them, the export, the state, the lock and `current` through the real helpers over a real
sshd; the boards are the unit tests' in-memory FakeBoards (real boards: the lab's e2e).

Two control hosts (two inventory copies, two mirrors): one is interrupted mid-rollout, the
other resumes it from the state kept on the server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from netroot.fleet.outcome import Outcome, Result
from netroot.fleet.rules import Fleet
from netroot.fleet.where import RemoteRoot
from netroot.remote.fleet import STATE_NAME
from netroot.rollout import runner
from netroot.rollout.plan import Step
from tests.integration.provision_hosts import NEEDS_RSYNC, NetnsHost, netns_host
from tests.unit.core import fleetkit as kit
from tests.unit.core.fleetkit import FakeBoards

pytestmark = NEEDS_RSYNC
BOARDS = ["pi-01", "pi-02", "pi-03"]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("srv")) as h:
        yield h


class Site:
    def __init__(self, host: NetnsHost, tmp_path: Path) -> None:
        self.root, self.tmp = tmp_path / "server-root", tmp_path
        server = {
            "ansible_host": host.address,
            "netroot_export_remote": True,
            "netroot_export_root": str(self.root),
            "netroot_nfs_server_lib_dir": str(tmp_path / "server-lib"),
            **host.inventory_vars(),
        }
        # Never contacted (FakeBoards stand in): TEST-NET addresses.
        boards = {
            name: {"ansible_host": f"192.0.2.{10 + i}", "netroot_image": "raspbian"}
            for i, name in enumerate(BOARDS)
        }
        self.data = {
            "all": {
                "children": {
                    "nfs_servers": {"hosts": {"nfs-01": server}},
                    "boards": {"hosts": boards},
                }
            }
        }
        self.opened: list[Fleet] = []

    def control(self, name: str, monkeypatch: pytest.MonkeyPatch) -> Fleet:
        """A control host's fleet (its own inventory copy and export mirror)."""
        fleet: Fleet = kit.open_control(self.tmp, name, self.data, monkeypatch)
        assert isinstance(fleet.store, RemoteRoot)
        self.opened.append(fleet)
        return fleet

    def current(self) -> str | None:
        return kit.current_link(self.root)

    def image(self, tag: str) -> str:
        return kit.stamped_image(self.tmp, tag)


@pytest.fixture
def site(host: NetnsHost, tmp_path: Path) -> Iterator[Site]:
    s = Site(host, tmp_path)
    yield s
    for fleet in s.opened:
        assert isinstance(fleet.store, RemoteRoot)
        fleet.store.close()


def _rollout(fleet: Fleet, boards: FakeBoards, source: str) -> runner.RolloutOutcome:
    out: runner.RolloutOutcome = kit.rollout(fleet, boards, source)
    return out


class DiesAfter(FakeBoards):
    """Boards whose control host dies (an exception) before the n-th smoke."""

    def __init__(self, names: Sequence[str], running: str | None, smokes: int) -> None:
        super().__init__(names, running)
        self.left = smokes

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return super().smoke(steps)


def test_rollout_moves_the_servers_current_only_when_green(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = site.control("ctl-a", monkeypatch)
    boards = FakeBoards(BOARDS, None)
    first = _rollout(fleet, boards, site.image("a"))
    version_a = first.result.results[0].version
    assert first.released and site.current() == version_a
    seen: list[str | None] = []
    smoke = boards.smoke

    def smoke_and_look(steps: Sequence[Step]) -> dict[str, Result]:
        seen.append(site.current())
        time.sleep(0.5)  # the lock holder's pings interleave with the rollout's own requests
        return smoke(steps)

    boards.smoke = smoke_and_look  # type: ignore[method-assign]
    monkeypatch.setattr("netroot.fleet.where.PING", 0.02)
    second = _rollout(fleet, boards, site.image("b"))
    version_b = second.result.results[0].version
    assert seen == [version_a] * 3  # exported to the server, `current` still A while smoked
    assert second.released and site.current() == version_b
    assert (site.root / "raspbian" / "versions" / f"{version_b}.json").is_file()
    state = fleet.load()
    assert {b: state.board(b).last_good for b in BOARDS} == {b: version_b for b in BOARDS}
    assert (site.root / STATE_NAME).stat().st_mode & 0o777 == 0o600


def test_a_rollout_interrupted_on_one_control_host_is_resumed_from_another(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = site.control("ctl-a", monkeypatch)
    boards = FakeBoards(BOARDS, None)
    version_a = _rollout(a, boards, site.image("a")).result.results[0].version
    dying = DiesAfter(BOARDS, version_a, smokes=1)  # the canary smokes green, then A dies
    source = site.image("b")
    with pytest.raises(KeyboardInterrupt):
        _rollout(a, dying, source)
    assert site.current() == version_a  # not released
    recorded = a.load()
    version_b = recorded.rollout.to_version if recorded.rollout else ""
    assert recorded.board("pi-01").last_good == version_b
    # Control host B, its own inventory copy and mirror, sees that state and finishes the job:
    # the canary is not switched again, the other two are, and `current` moves.
    b = site.control("ctl-b", monkeypatch)
    resumed = FakeBoards(BOARDS, version_a)
    resumed.running = dict(dying.running)
    out = _rollout(b, resumed, source)
    assert out.released and site.current() == version_b
    switched = [board for op, names in resumed.calls if op == "switch" for board in names]
    assert switched == ["pi-02", "pi-03"]
    assert all(r.outcome == Outcome.OK for r in out.result.results)
    assert {n: a.load().board(n).last_good for n in BOARDS} == {n: version_b for n in BOARDS}
