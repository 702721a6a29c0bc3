"""The real boards behind the rollout engine: Ansible (provision) switches, smoke verifies."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netroot.fleet.outcome import Outcome, Result, from_smoke_status
from netroot.inventory import Board, Inventory
from netroot.rollout.plan import Step
from netroot.smoke.stage import SmokeSettings


def on_down_servers(down: Mapping[str, str], boards: Iterable[Board]) -> dict[str, Result]:
    """The boards whose NFS server is down: unreachable (against the budget), with why."""
    out: dict[str, Result] = {}
    for board in boards:
        if board.server in down:
            why = f"its NFS server {board.server} is down: {down[board.server]}"
            out[board.name] = (Outcome.UNREACHABLE, why)
    return out


@dataclass
class PastDownServers:
    """The engine's fleet, less the boards of servers the export could not reach: those
    are not switched (nothing to mount there) and count as unreachable."""

    inner: Any  # the engine's BoardDriver (netroot.rollout.engine)
    down: Mapping[str, str]

    def switch(self, steps: Sequence[Step], stagger: float) -> dict[str, Result]:
        out = on_down_servers(self.down, (s.board for s in steps))
        rest = [s for s in steps if s.board.name not in out]
        if rest:
            out.update(self.inner.switch(rest, stagger))
        return out

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        result: dict[str, Result] = self.inner.smoke(steps)
        return result

    def prepare(self, boards: Sequence[Board]) -> dict[str, Result]:
        out = on_down_servers(self.down, boards)
        rest = [b for b in boards if b.name not in out]
        if rest:
            out.update(self.inner.prepare(rest))
        return out


@dataclass
class AnsibleDriver:
    """Provision switches a batch, the smoke verifies it. The engine hands it the inventory's
    `Board` values (in the plan's steps), and it hands those same values to the smoke;
    provision takes names (its targets), and the answers are by name (the fleet state's key)."""

    inventory: Inventory
    smoke_settings: SmokeSettings = field(default_factory=SmokeSettings)
    log: Callable[[str], None] = lambda _m: None
    smoke_reports: list[Any] = field(default_factory=list)
    runner: Any = None  # provision's runner (None: ansible-runner); tests replay recorded runs
    # A server's exports list every one of its boards once a run of this rollout configured
    # it: later batches and rollbacks whose servers are all configured run the boards' play
    # only (about 2 s less controller CPU per batch).
    configured: set[str] = field(default_factory=set)
    # The caller checked every host's become before the rollout or rollback started.
    become_checked: bool = False
    # NFS servers found down (server -> why): at the export, or unreachable in a batch's run.
    # Their boards are not switched (nothing to mount from): each counts as unreachable
    # against the rollout's budget, and a rerun once the server is back finishes the job.
    down: dict[str, str] = field(default_factory=dict)

    def switch(self, steps: Sequence[Step], stagger: float) -> dict[str, Result]:
        """One Ansible run for the batch; with a stagger, one board at a time, S seconds apart."""
        if stagger <= 0:
            return self._provision(steps)
        out: dict[str, Result] = {}
        for i, step in enumerate(steps):
            if i:
                time.sleep(stagger)
            out.update(self._provision([step]))
        return out

    def _provision(self, steps: Sequence[Step]) -> dict[str, Result]:
        out = on_down_servers(self.down, (s.board for s in steps))
        rest = [s for s in steps if s.board.name not in out]
        if rest:
            out.update(
                self._run([s.board for s in rest], {s.board.name: s.to_version for s in rest})
            )
        return out

    def prepare(self, boards: Sequence[Board]) -> dict[str, Result]:
        """The boot config only (the board role's netroot_board_prepare_only), one run."""
        out = on_down_servers(self.down, boards)
        rest = [b for b in boards if b.name not in out]
        if rest:
            out.update(self._run(rest, None))
        return out

    def _run(self, boards: Sequence[Board], versions: dict[str, str] | None) -> dict[str, Result]:
        """One provision run: each board switched to its version (None: prepared, no version)."""
        from netroot.provision.apply import provision

        prepare = versions is None
        servers = {b.server for b in boards}
        result = provision(
            self.inventory,
            [b.name for b in boards],
            versions=versions,
            extra_vars={"netroot_board_prepare_only": True} if prepare else None,
            runner=self.runner,
            server_configured=servers <= self.configured,
            become_checked=self.become_checked,
        )
        messages = {f.host: f"{f.task}: {f.message}" for f in result.summary.failures}
        configures = result.plan.playbook == "site.yml"
        for name in result.plan.servers:
            server = result.summary.hosts.get(name)
            if server is not None and server.state == Outcome.UNREACHABLE:
                self.down[name] = messages.get(name, "unreachable")
            elif server is not None and server.state in ("ok", "changed") and configures:
                self.configured.add(name)
        gone = on_down_servers(self.down, boards)
        out: dict[str, Result] = {}
        for board in (b.name for b in boards):
            version = versions[board] if versions is not None else ""
            stats = result.summary.hosts.get(board)
            state = stats.state if stats else Outcome.FAILED.value
            if board in gone:
                out[board] = gone[board]
            elif state == Outcome.UNREACHABLE:
                out[board] = (Outcome.UNREACHABLE, messages.get(board, "unreachable"))
            elif state == Outcome.FAILED or stats is None:
                # Also a run Ansible aborted before this host's result (#76915): a failure.
                out[board] = (Outcome.FAILED, messages.get(board, f"ansible rc {result.rc}"))
            elif not prepare and result.mounted.get(board) not in (None, version):
                out[board] = (Outcome.FAILED, f"mounted {result.mounted[board]}, wanted {version}")
            else:
                out[board] = (Outcome.OK, "")
        return out

    def smoke(self, steps: Sequence[Step]) -> dict[str, Result]:
        from netroot.smoke.stages import run_smoke

        order = {name: i for i, name in enumerate(self.inventory.boards)}
        report = run_smoke(
            self.inventory,
            [s.board for s in sorted(steps, key=lambda s: order.get(s.board.name, len(order)))],
            self.smoke_settings,
            expected={s.board.name: {"version": s.to_version} for s in steps},
        )
        self.smoke_reports.append(report)
        out: dict[str, Result] = {}
        for b in report.boards:
            outcome = from_smoke_status(b.status, b.reachable)
            if outcome == Outcome.UNREACHABLE:
                out[b.board] = (outcome, b.error)
            elif outcome == Outcome.FAILED:
                bad = [f"{c.check}: {c.message}" for c in b.checks if c.status == "fail"]
                out[b.board] = (outcome, "; ".join(bad)[:500])
            else:
                out[b.board] = (outcome, "")
        return out
