"""The real boards behind the rollout engine: Ansible (provision) switches, smoke verifies."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netroot.fleet.outcome import Outcome, Result, from_smoke_status
from netroot.inventory import Board, Inventory
from netroot.smoke.stage import SmokeSettings


def on_down_servers(
    boards: Mapping[str, Board], down: Mapping[str, str], names: Iterable[str]
) -> dict[str, Result]:
    """The boards whose NFS server is down: unreachable (against the budget), with why."""
    out: dict[str, Result] = {}
    for name in names:
        server = boards[name].server
        if server in down:
            out[name] = (Outcome.UNREACHABLE, f"its NFS server {server} is down: {down[server]}")
    return out


@dataclass
class PastDownServers:
    """The engine's fleet, less the boards of servers the export could not reach: those
    are not switched (nothing to mount there) and count as unreachable."""

    inner: Any  # the engine's BoardDriver (netroot.rollout.engine)
    boards: Mapping[str, Board]  # the rollout's boards, as the inventory gave them
    down: Mapping[str, str]

    def switch(self, versions: Mapping[str, str], stagger: float) -> dict[str, Result]:
        out = on_down_servers(self.boards, self.down, versions)
        rest = {b: v for b, v in versions.items() if b not in out}
        if rest:
            out.update(self.inner.switch(rest, stagger))
        return out

    def smoke(self, boards: Sequence[str], versions: Mapping[str, str]) -> dict[str, Result]:
        result: dict[str, Result] = self.inner.smoke(boards, versions)
        return result

    def prepare(self, boards: Sequence[str]) -> dict[str, Result]:
        out = on_down_servers(self.boards, self.down, boards)
        rest = [b for b in boards if b not in out]
        if rest:
            out.update(self.inner.prepare(rest))
        return out


@dataclass
class AnsibleDriver:
    """Provision switches a batch, the smoke verifies it. The engine names boards by name (the
    fleet state's keys); the driver holds each as the one `Board` the inventory gave the
    command and hands those same values to the smoke (provision takes names: its targets)."""

    inventory: Inventory
    # The boards it drives, by name, in inventory order (default: every board of the inventory).
    boards: Mapping[str, Board] = field(default_factory=dict)
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

    def __post_init__(self) -> None:
        if not self.boards:
            self.boards = dict(self.inventory.boards)

    def switch(self, versions: Mapping[str, str], stagger: float) -> dict[str, Result]:
        """One Ansible run for the batch; with a stagger, one board at a time, S seconds apart."""
        if stagger <= 0:
            return self._provision(dict(versions))
        out: dict[str, Result] = {}
        for i, (board, version) in enumerate(versions.items()):
            if i:
                time.sleep(stagger)
            out.update(self._provision({board: version}))
        return out

    def _provision(self, versions: dict[str, str]) -> dict[str, Result]:
        out = self._server_down(versions)
        versions = {b: v for b, v in versions.items() if b not in out}
        if versions:
            out.update(self._run(versions))
        return out

    def _server_down(self, boards: Mapping[str, str]) -> dict[str, Result]:
        return on_down_servers(self.boards, self.down, boards)

    def prepare(self, boards: Sequence[str]) -> dict[str, Result]:
        """The boot config only (the board role's netroot_board_prepare_only), one run."""
        out = self._server_down(dict.fromkeys(boards, ""))
        rest = [b for b in boards if b not in out]
        if rest:
            out.update(self._run(dict.fromkeys(rest, ""), prepare=True))
        return out

    def _run(self, versions: dict[str, str], prepare: bool = False) -> dict[str, Result]:
        """One provision run: each board switched to its version (prepare: none, "")."""
        from netroot.provision.apply import provision

        servers = {self.boards[b].server for b in versions}
        result = provision(
            self.inventory,
            list(versions),
            versions=None if prepare else versions,
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
        gone = self._server_down(versions)
        out: dict[str, Result] = {}
        for board, version in versions.items():
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

    def smoke(self, boards: Sequence[str], versions: Mapping[str, str]) -> dict[str, Result]:
        from netroot.smoke.stages import run_smoke

        wanted = set(boards)
        report = run_smoke(
            self.inventory,
            [b for name, b in self.boards.items() if name in wanted],  # inventory order
            self.smoke_settings,
            expected={b: {"version": v} for b, v in versions.items()},
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
