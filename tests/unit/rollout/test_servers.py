"""Several NFS servers, one fleet, over tmp export roots (one per server) with in-memory boards.

A rollout exports to every server of its boards; a server whose export fails (its root is not
writable: a server that is down, as far as the rollout can tell) counts its boards as
unreachable against the budget while the other server's boards complete; the rerun once it is
back finishes the job and only then moves `current`, on both servers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netroot.cli.source import open_source
from netroot.errors import Exit, NetrootError, UsageError
from netroot.export import verbs
from netroot.export.fanout import Fanout, export_all
from netroot.export.manifest import Layout
from netroot.export.request import ExportOptions
from netroot.fleet.outcome import Outcome
from netroot.fleet.rules import Fleet
from netroot.inventory import Inventory, parse
from netroot.remote import lock
from netroot.rollout import runner
from tests.unit.core.fleetkit import FakeBoards, rollout, stamped_image

BOARDS = {"pi-01": "nfs-01", "pi-02": "nfs-01", "pi-03": "nfs-02", "pi-04": "nfs-02"}


def two_servers(tmp: Path, roots: dict[str, Path], cap: int = 10) -> Inventory:
    servers = {
        name: {"ansible_host": f"10.77.0.{2 + i}", "netroot_export_root": str(root),
               "netroot_server_reboot_batch": cap}
        for i, (name, root) in enumerate(roots.items())
    }  # fmt: skip
    boards = {
        b: {"ansible_host": f"10.77.0.{11 + i}", "netroot_image": "raspbian",
            "netroot_nfs_server": s}
        for i, (b, s) in enumerate(BOARDS.items())
    }  # fmt: skip
    data = {"all": {"children": {"nfs_servers": {"hosts": servers}, "boards": {"hosts": boards}}}}
    return parse(data, tmp / "inventory.yml")


def _image(tmp: Path, tag: str) -> str:
    return stamped_image(tmp, tag)


@contextlib.contextmanager
def _unreachable(root: Path) -> Iterator[None]:
    """The server's export root cannot be written (a file where it should be; root ignores
    modes): for the export, the server is out of reach. Put back afterwards."""
    aside = root.with_name(root.name + ".aside")
    root.rename(aside)
    root.write_text("not a directory\n")
    try:
        yield
    finally:
        root.unlink()
        aside.rename(root)


def _current(root: Path) -> str | None:
    return verbs.current_id(Layout(root, "raspbian"))


def _export(
    fleet: Fleet, image: str, servers: list[str] | None = None,
    options: ExportOptions = ExportOptions(),
) -> Fanout:  # fmt: skip
    """Export to those servers' roots (default: every server)."""
    roots = {s: fleet.root_of(s) for s in servers or fleet.inventory.servers}
    return export_all(roots, open_source(image), "raspbian", options)


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Any]:
    roots = {"nfs-01": tmp_path / "root-1", "nfs-02": tmp_path / "root-2"}
    fleet = Fleet(two_servers(tmp_path, roots))
    first = _export(fleet, _image(tmp_path, "a"))
    assert set(first.done) == {"nfs-01", "nfs-02"} and not first.failed
    boards = FakeBoards(list(BOARDS), first.version)
    return {"fleet": fleet, "roots": roots, "boards": boards, "a": first.version, "tmp": tmp_path}


def _rollout(site: dict[str, Any], source: str, max_fail: str = "0") -> runner.RolloutOutcome:
    out: runner.RolloutOutcome = rollout(
        site["fleet"], site["boards"], source, batch=2, max_fail=max_fail
    )
    return out


def test_fleet_home_holds_the_state_each_server_its_versions(site: dict[str, Any]) -> None:
    fleet: Fleet = site["fleet"]
    roots = site["roots"]
    assert fleet.root == roots["nfs-01"]  # the first server: the fleet home
    assert fleet.root_of("nfs-02").where == str(roots["nfs-02"])
    assert _current(roots["nfs-01"]) == _current(roots["nfs-02"]) == site["a"]


def test_a_rollout_over_two_servers_completes_and_releases_on_both(site: dict[str, Any]) -> None:
    out = _rollout(site, _image(site["tmp"], "b"))
    b = out.result.results[0].version
    assert out.released and all(r.outcome == Outcome.OK for r in out.result.results)
    for root in site["roots"].values():
        assert _current(root) == b  # each server's own `current`
    assert not (site["roots"]["nfs-02"] / lock.LOCK_NAME).exists()  # released again


def test_a_server_down_at_the_export_fails_its_boards_within_the_budget(
    site: dict[str, Any],
) -> None:
    roots = site["roots"]
    with _unreachable(roots["nfs-02"]):  # the export cannot stage there
        out = _rollout(site, _image(site["tmp"], "b"), max_fail="2")
    outcomes = {r.board: r.outcome for r in out.result.results}
    assert outcomes == {"pi-01": Outcome.OK, "pi-02": Outcome.OK,
                        "pi-03": Outcome.UNREACHABLE, "pi-04": Outcome.UNREACHABLE}  # fmt: skip
    assert all("its NFS server nfs-02 is down" in r.message for r in out.result.results
               if r.outcome == Outcome.UNREACHABLE)  # fmt: skip
    # nfs-02's boards were never switched to a version their server lacks.
    assert all("pi-03" not in names for kind, names in site["boards"].calls if kind == "switch")
    assert not out.released and _current(roots["nfs-01"]) == site["a"]
    # The server is back: the rerun sends it the version and finishes the job.
    again = _rollout(site, _image(site["tmp"], "b"), max_fail="2")
    b = out.result.results[0].version
    assert again.released and {r.board for r in again.result.results} == {"pi-03", "pi-04"}
    assert _current(roots["nfs-01"]) == _current(roots["nfs-02"]) == b


def test_over_budget_a_server_down_stops_the_rollout(site: dict[str, Any]) -> None:
    with _unreachable(site["roots"]["nfs-02"]):
        out = _rollout(site, _image(site["tmp"], "b"), max_fail="1")
    assert out.result.stopped and "failure budget spent" in out.result.reason


def test_rollback_refuses_a_version_the_boards_server_lacks(site: dict[str, Any]) -> None:
    fleet: Fleet = site["fleet"]
    only_one = _export(fleet, _image(site["tmp"], "c"), ["nfs-01"], ExportOptions(switch=False))
    boards = fleet.inventory.resolve(["boards"])
    with pytest.raises(
        UsageError, match=r"pi-03: raspbian has no version \w+ on its server nfs-02"
    ):
        runner.rollback_versions(fleet, boards, only_one.version)
    mine = [fleet.inventory.boards["pi-01"]]
    assert runner.rollback_versions(fleet, mine, only_one.version) == {"pi-01": only_one.version}


def test_desired_follows_each_boards_own_servers_current(site: dict[str, Any]) -> None:
    fleet: Fleet = site["fleet"]
    c = _export(fleet, _image(site["tmp"], "c"), ["nfs-02"]).version
    wanted = fleet.desired(fleet.inventory.resolve(["boards"]), fleet.load())
    assert {b: d.version for b, d in wanted.items()} == {
        "pi-01": site["a"], "pi-02": site["a"], "pi-03": c, "pi-04": c}  # fmt: skip


def test_an_export_that_fails_on_one_server_names_it_and_keeps_the_others(
    site: dict[str, Any],
) -> None:
    fleet: Fleet = site["fleet"]
    with _unreachable(site["roots"]["nfs-02"]):
        out = _export(fleet, _image(site["tmp"], "d"))
    assert list(out.done) == ["nfs-01"] and list(out.failed) == ["nfs-02"]
    assert _current(site["roots"]["nfs-01"]) == out.version
    assert _current(site["roots"]["nfs-02"]) == site["a"]
    err = out.error()
    assert "not on nfs-02" in err.message and "it is on nfs-01" in err.message
    assert err.code == Exit.USAGE  # an unwritable root: the local export's own code


def test_two_servers_sharing_one_root_export_once(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    inv = two_servers(tmp_path, {"nfs-01": shared, "nfs-02": shared})
    out = _export(Fleet(inv), _image(tmp_path, "a"))
    assert out.done["nfs-01"] is out.done["nfs-02"]
    assert len(verbs.list_versions(Layout(shared, "raspbian"))) == 1


class _Unreadable:
    """A server's root that cannot be reached (its SSH session fails)."""

    where = "nfs-02:/srv/netroot"

    def current(self, image: str) -> str | None:
        raise NetrootError(
            "nfs-02: ssh root@10.77.0.3:22 failed: Connection refused", "", Exit.UNREACHABLE
        )


def test_status_names_a_server_that_cannot_be_read(site: dict[str, Any]) -> None:
    from netroot.fleet.status import board_status

    fleet: Fleet = site["fleet"]
    broken = Fleet(fleet.inventory, roots={"nfs-02": _Unreadable()})  # type: ignore[dict-item]
    boards = fleet.inventory.resolve(["boards"])
    with pytest.raises(NetrootError):
        broken.desired(boards, broken.load())
    down: dict[str, str] = {}
    wanted = broken.desired(boards, broken.load(), down)
    assert list(down) == ["nfs-02"] and wanted["pi-01"].version == site["a"]
    observed = {b.name: (None, "unreachable") for b in boards}
    rows = {r.board: r for r in board_status(boards, broken.load(), observed, wanted, down)}
    assert rows["pi-03"].server == "nfs-02"
    assert rows["pi-03"].drift.startswith("its NFS server nfs-02 cannot be read: ")
    assert rows["pi-01"].drift == "unknown (unreachable)"


def test_a_rollback_is_paced_per_server(site: dict[str, Any]) -> None:
    first = _rollout(site, _image(site["tmp"], "b"))
    assert first.released
    paced = Fleet(two_servers(site["tmp"], site["roots"], cap=1))
    boards = site["boards"]
    boards.calls.clear()
    results = runner.rollback(paced, paced.inventory.resolve(["boards"]), site["a"],
                              lambda _m: None, engine_fleet=boards)  # fmt: skip
    assert {r.outcome for r in results} == {Outcome.ROLLED_BACK}
    switched = [names for kind, names in boards.calls if kind == "switch"]
    assert switched == [("pi-01", "pi-03"), ("pi-02", "pi-04")]  # one board of each server
