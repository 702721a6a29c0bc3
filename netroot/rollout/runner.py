"""Rollout and rollback as steps the CLI calls: plan (read-only), then run (under the lock).

Planning reads the inventory, the fleet state, the export tree and the boards, and computes
the version a source would get without writing anything (a dry run or a declined prompt
leaves every byte as it was). Running re-reads the state under the writer's lock, exports
the version without moving `current`, drives the engine, and moves `current` only when every
targeted board ended on the version, smoked green.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netroot.errors import UsageError
from netroot.export.sources import SourceInfo
from netroot.fleet import rules
from netroot.fleet.rules import Fleet
from netroot.inventory import Board
from netroot.rollout.engine import BoardResult, RolloutResult, run_rollback, run_rollout
from netroot.rollout.plan import Count, Pacing, Plan, Step, defer, make_plan
from netroot.smoke.stage import SmokeSettings

Log = Callable[[str], None]
Observe = Callable[[list[Board]], Mapping[str, Any]]  # board -> BoardFacts, None: unreachable


@dataclass(frozen=True)
class PlannedRollout:
    plan: Plan
    boards: list[Board]  # the boards the rollout targets (pinned ones left out)
    pinned: list[str]
    observed: Mapping[str, Any]  # board -> BoardFacts (None: unreachable) when planned


@dataclass(frozen=True)
class RolloutOutcome:
    result: RolloutResult
    released: bool  # `current` moved to the new version
    # The smokes' reports (netroot.smoke.results.SmokeReport), in the order they ran: the
    # canary's first. Empty when the engine's fleet keeps none (tests' fake boards).
    smokes: tuple[Any, ...] = ()


def observe_boards(boards: list[Board]) -> dict[str, Any]:
    """What each board has mounted, over SSH (read-only)."""
    from netroot.fleet.probe import observe_all

    return {name: facts for name, (facts, _err) in observe_all(boards).items()}


def plan_rollout(
    fleet: Fleet,
    targets: list[Board],
    info: SourceInfo,
    name: str,
    canary: int,
    batch: Count,
    max_fail: Count,
    stagger: float,
    log: Log,
    observe: Observe = observe_boards,
) -> PlannedRollout:
    """The rollout as data; writes nothing anywhere."""
    from netroot.export.verbs import planned_version

    pinned = [b.name for b in targets if b.version]
    boards = [b for b in targets if not b.version]
    other = [b.name for b in boards if b.image != name]
    if other:
        raise UsageError(
            f"boards {', '.join(other)} run another image than {name!r}",
            "pass --name to match their netroot_image, or pick another --group",
        )
    version = planned_version(info)
    state = fleet.load()
    observed = observe(boards)
    for board, facts in observed.items():
        if facts is None:
            log(f"{board}: unreachable")
    sources = rules.plan_sources(state, observed, version)
    # Reachable boards running no version whose boot config netroot sets up (a stock sd board).
    fresh = [
        b
        for b in boards
        if b.mode.prepared_before_rollout
        and (facts := observed.get(b.name)) is not None
        and not facts.mounted
    ]
    plan = make_plan(
        boards, sources, version, canary, batch, max_fail, stagger, pacing_for(fleet), fresh
    )
    return PlannedRollout(plan, boards, pinned, observed)


def run(
    fleet: Fleet,
    planned: PlannedRollout,
    source: str,
    info: SourceInfo,
    apply: Callable[[Any], Any],
    name: str,
    smoke: SmokeSettings,
    log: Log,
    engine_fleet: Any = None,
    become_checked: bool = False,
) -> RolloutOutcome:
    """Export without switching, run the plan, release the version if every board is green.

    Call with the writer's lock held. `engine_fleet` replaces the Ansible fleet (tests).
    become_checked: the caller ran `check_become` on the server and every planned board.
    """
    from netroot.export.fanout import export_all
    from netroot.export.request import ExportOptions, Source
    from netroot.rollout.drive import AnsibleDriver, PastDownServers

    state = fleet.load()  # again: the plan was read before the lock
    rules.adopt_observed(state, planned.observed)
    servers = fleet.inventory.servers_for(planned.boards)
    where = ", ".join(fleet.root_of(s.name).where for s in servers)
    log(f"export {source} as {name} to {where} (current unchanged) ...")
    roots = {s.name: fleet.root_of(s.name) for s in servers}
    exported = export_all(roots, Source(info, apply), name, ExportOptions(switch=False))
    if not exported.done:  # nowhere to switch a board to: the rollout cannot start
        raise exported.error()
    for server, why in exported.failed.items():
        log(f"{server}: the export failed ({why.message}): its boards count as failed")
    if exported.manifest.version != planned.plan.to_version:
        raise UsageError(f"{source} changed while planning", "run the rollout again")
    state.save()
    driver = engine_fleet or AnsibleDriver(
        fleet.inventory, smoke, log=log, become_checked=become_checked
    )
    target = driver
    down = {s: f"the export to it failed: {e.message}" for s, e in exported.failed.items()}
    plan = planned.plan
    if down:
        target = PastDownServers(target, down)
        plan = defer(plan, down)
    result = run_rollout(plan, state, target, source, log=log, name=name)
    released = not result.stopped and release_if_green(fleet, planned, name, result.results, log)
    return RolloutOutcome(result, released, tuple(getattr(driver, "smoke_reports", ())))


def release_if_green(
    fleet: Fleet, planned: PlannedRollout, name: str, results: Sequence[BoardResult] = (),
    log: Log = lambda _m: None,
) -> bool:  # fmt: skip
    """Move `current` to the rollout's version when every targeted board runs it green.

    Also what a rerun with nothing left to switch does (a controller that died after the
    last smoke, before this step). Call with the writer's lock held.
    """
    state = fleet.load()
    targeted = [b.name for b in planned.boards]
    if not rules.rollout_green([*results, *_unchanged_ok(planned.plan, state)], targeted):
        return False
    servers = [s.name for s in fleet.inventory.servers_for(planned.boards)]
    return fleet.release(name, planned.plan.to_version, servers, f"netroot rollout {name}", log)


def _unchanged_ok(plan: Plan, state: Any) -> list[BoardResult]:
    """Boards already on the version, smoked green: they count as green for the release."""
    from netroot.fleet.outcome import Outcome

    return [
        BoardResult(b.name, -1, Outcome.OK, plan.to_version)
        for b in plan.unchanged
        if state.board(b.name).last_good == plan.to_version
    ]


def rollback_versions(fleet: Fleet, boards: list[Board], to: str | None) -> dict[str, str]:
    """Where each board goes back to (reads the state and the export tree)."""
    state = fleet.load()
    wanted = {to} if to else {state.board(b.name).previous_good() for b in boards}
    exists = fleet.has_versions(boards, (v for v in wanted if v))
    return rules.rollback_versions(boards, state, to, exists)


def rollback(
    fleet: Fleet,
    boards: list[Board],
    to: str | None,
    log: Log,
    engine_fleet: Any = None,
    become_checked: bool = False,
) -> list[BoardResult]:
    """Roll back under the lock (state re-read after taking it).

    become_checked: the caller ran `check_become` on the server and every board.
    """
    from netroot.rollout.drive import AnsibleDriver

    versions = rollback_versions(fleet, boards, to)
    state = fleet.load()
    target = engine_fleet or AnsibleDriver(fleet.inventory, log=log, become_checked=become_checked)
    # Paced like a rollout's batches: at most netroot_server_reboot_batch boards of one
    # server switch (and reboot) at once; one wave when every server is within its cap.
    steps = [Step(b, None, versions[b.name]) for b in boards if b.name in versions]
    results: list[BoardResult] = []
    for wave in pacing_for(fleet).split(steps, len(steps)):
        results += run_rollback(state, target, wave, log)
    return results


def pacing_for(fleet: Fleet) -> Pacing:
    """Each server's cap (netroot_server_reboot_batch); a board's server is its own."""
    return Pacing({s.name: s.reboot_batch for s in fleet.inventory.servers.values()})
