"""The real fleet behind the rollout engine: Ansible (provision) switches, smoke verifies."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from netroot.inventory import Inventory
from netroot.rollout.engine import Outcome


@dataclass
class AnsibleFleet:
    inventory: Inventory
    qpu_mode: str = "auto"
    checks_dir: object | None = None  # Path of user checks, or None
    log: Callable[[str], None] = lambda _m: None
    smoke_reports: list[object] = field(default_factory=list)

    def switch(self, versions: Mapping[str, str], stagger: float) -> dict[str, Outcome]:
        """One Ansible run for the batch; with a stagger, one board at a time, S seconds apart."""
        if stagger <= 0:
            return self._provision(dict(versions))
        out: dict[str, Outcome] = {}
        for i, (board, version) in enumerate(versions.items()):
            if i:
                time.sleep(stagger)
            out.update(self._provision({board: version}))
        return out

    def _provision(self, versions: dict[str, str]) -> dict[str, Outcome]:
        from netroot.provision.service import provision

        result = provision(self.inventory, list(versions), versions=versions)
        messages = {f.host: f"{f.task}: {f.message}" for f in result.summary.failures}
        out: dict[str, Outcome] = {}
        for board, version in versions.items():
            stats = result.summary.hosts.get(board)
            state = stats.state if stats else "failed"
            if state == "unreachable":
                out[board] = ("unreachable", messages.get(board, "unreachable"))
            elif state == "failed" or stats is None:
                out[board] = ("failed", messages.get(board, f"ansible rc {result.rc}"))
            elif result.mounted.get(board) not in (None, version):
                out[board] = ("failed", f"mounted {result.mounted[board]}, wanted {version}")
            else:
                out[board] = ("ok", "")
        return out

    def smoke(self, boards: Sequence[str], versions: Mapping[str, str]) -> dict[str, Outcome]:
        from pathlib import Path

        from netroot.smoke.qpu import run_qpu
        from netroot.smoke.service import run_smoke

        report = run_smoke(
            self.inventory,
            self.inventory.resolve(list(boards)),
            checks_dir=Path(str(self.checks_dir)) if self.checks_dir else None,
            qpu_mode=self.qpu_mode,
            expected={b: {"version": v} for b, v in versions.items()},
            qpu_runner=run_qpu,
        )
        self.smoke_reports.append(report)
        out: dict[str, Outcome] = {}
        for b in report.boards:
            if not b.reachable:
                out[b.board] = ("unreachable", b.error)
            elif b.status == "fail":
                bad = [f"{c.check}: {c.message}" for c in b.checks if c.status == "fail"]
                out[b.board] = ("failed", "; ".join(bad)[:500])
            else:
                out[b.board] = ("ok", "")
        return out
