"""The Ansible driver's reading of a run, replayed from recorded ansible-runner events.

ansible/ansible#7686: an unreachable host is not a failure to max_fail_percentage; here it is
reported as unreachable and spends the rollout's budget. ansible/ansible#76915: when every
host fails Ansible ends the play; a board with no result at all is a failure, not a crash.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from netroot.fleet.outcome import Outcome
from netroot.fleet.state import load_state
from netroot.inventory import Inventory, parse
from netroot.provision.plan import RunPlan
from netroot.rollout.drive import AnsibleDriver
from netroot.rollout.engine import run_rollout
from netroot.rollout.plan import Count, Step, make_plan

FIXTURES = Path(__file__).parents[1] / "fixtures"
V = "b" * 16


def _inventory(tmp_path: Path) -> Any:
    boards = {n: {"ansible_host": a} for n, a in (("pi-a", "10.77.0.11"), ("pi-b", "10.77.0.12"))}
    server = {"ansible_host": "10.77.0.2", "netroot_export_root": str(tmp_path),
              "netroot_nfs_backend": "ganesha"}  # fmt: skip
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-t": server}},
                                 "boards": {"hosts": boards}}}}  # fmt: skip
    return parse(data, tmp_path / "inventory.yml")


def _replay(events: list[dict[str, Any]], rc: int) -> Callable[..., Any]:
    def runner(plan: RunPlan, handle: Callable[[Mapping[str, Any]], None]) -> Any:
        for event in events:
            handle(event)
        return SimpleNamespace(status="failed", rc=rc, run_dir=None, stdout_tail="")

    return runner


def _steps(inv: Inventory, *names: str) -> list[Step]:
    """The inventory's boards switched to V, as the engine hands them to its driver."""
    return [Step(inv.boards[n], None, V) for n in names]


def _events() -> list[dict[str, Any]]:
    return list(json.loads((FIXTURES / "provision_events_unreachable.json").read_text()))


def test_unreachable_boards_are_unreachable_and_spend_the_budget(tmp_path: Path) -> None:
    fleet = AnsibleDriver(inv := _inventory(tmp_path), runner=_replay(_events(), 4))
    switched = fleet.switch(_steps(inv, "pi-a", "pi-b"), 0.0)
    assert {b: r[0] for b, r in switched.items()} == {
        "pi-a": Outcome.UNREACHABLE,
        "pi-b": Outcome.UNREACHABLE,
    }
    plan = make_plan([inv.boards["pi-a"], inv.boards["pi-b"]], {}, V, canary=0,
                     batch=Count(2, False), max_fail=Count(1, False))  # fmt: skip
    result = run_rollout(plan, load_state(tmp_path), fleet, "img:2")
    assert result.stopped and result.reason.startswith("failure budget spent: 2 failed")


def test_a_play_aborted_before_the_boards_is_a_failure(tmp_path: Path) -> None:
    # The server's play only, then stats without the boards: Ansible ended before any ran.
    events = [e for e in _events() if (e.get("event_data") or {}).get("host") in (None, "nfs-t")]
    stats = events[-1]["event_data"]
    for key, per_host in stats.items():
        if isinstance(per_host, dict):
            stats[key] = {h: n for h, n in per_host.items() if h == "nfs-t"}
    fleet = AnsibleDriver(inv := _inventory(tmp_path), runner=_replay(events, 2))
    switched = fleet.switch(_steps(inv, "pi-a", "pi-b"), 0.0)
    assert {b: r[0] for b, r in switched.items()} == {
        "pi-a": Outcome.FAILED,
        "pi-b": Outcome.FAILED,
    }
    assert all("ansible rc 2" in r[1] for r in switched.values())


def test_later_batches_leave_the_server_configured(tmp_path: Path) -> None:
    playbooks: list[str] = []
    replay = _replay(_events(), 4)

    def runner(plan: RunPlan, handle: Callable[[Mapping[str, Any]], None]) -> Any:
        playbooks.append(plan.playbook)
        return replay(plan, handle)

    fleet = AnsibleDriver(inv := _inventory(tmp_path), runner=runner)
    fleet.switch(_steps(inv, "pi-a"), 0.0)
    fleet.switch(_steps(inv, "pi-b"), 0.0)
    assert playbooks == ["site.yml", "boards.yml"]


def _server_unreachable() -> list[dict[str, Any]]:
    """The server's first task cannot reach it; the boards' play then fails on them."""
    res = {"unreachable": True, "msg": "Failed to connect to the host via ssh: Connection refused"}
    fail = {"failed": True, "msg": "'dict object' has no attribute 'netroot_nfs_server_exported'"}
    return [
        {"event": "runner_on_unreachable",
         "event_data": {"host": "nfs-t", "task": "Read the server's state", "res": res}},
        *({"event": "runner_on_failed",
           "event_data": {"host": b, "task": "Check the version is exported", "res": fail}}
          for b in ("pi-a", "pi-b")),
        {"event": "playbook_on_stats",
         "event_data": {"dark": {"nfs-t": 1}, "failures": {"pi-a": 1, "pi-b": 1},
                        "ok": {}, "changed": {}, "skipped": {}, "rescued": {}, "ignored": {}}},
    ]  # fmt: skip


def test_a_server_unreachable_in_a_batch_fails_its_boards_as_unreachable(tmp_path: Path) -> None:
    runs: list[tuple[str, ...]] = []
    replay = _replay(_server_unreachable(), 4)

    def runner(plan: RunPlan, handle: Callable[[Mapping[str, Any]], None]) -> Any:
        runs.append(plan.boards)
        return replay(plan, handle)

    fleet = AnsibleDriver(inv := _inventory(tmp_path), runner=runner)
    switched = fleet.switch(_steps(inv, "pi-a"), 0.0)
    assert switched["pi-a"][0] == Outcome.UNREACHABLE
    assert "its NFS server nfs-t is down" in switched["pi-a"][1]
    assert "Connection refused" in switched["pi-a"][1]
    # The next batch of that server is not run at all: nothing to mount from.
    later = fleet.switch(_steps(inv, "pi-b"), 0.0)
    assert later["pi-b"][0] == Outcome.UNREACHABLE and runs == [("pi-a",)]
