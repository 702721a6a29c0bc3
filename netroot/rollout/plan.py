"""Rollout planning: canary, batches, failure budget, and the decision after each batch (pure)."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from netroot.errors import UsageError
from netroot.inventory import Board

_COUNT_RE = re.compile(r"^(\d+)(%?)$")


@dataclass(frozen=True)
class Count:
    """A number of boards, absolute ('2') or relative ('25%')."""

    value: int
    percent: bool

    @classmethod
    def parse(cls, text: str, option: str) -> Count:
        m = _COUNT_RE.match(text.strip())
        if not m or (m.group(2) and int(m.group(1)) > 100):
            raise UsageError(f"{option} {text!r}: expected a count like 2 or a percentage like 25%")
        return cls(int(m.group(1)), bool(m.group(2)))

    def of(self, total: int, at_least: int = 0) -> int:
        n = math.ceil(total * self.value / 100) if self.percent else self.value
        return max(at_least, min(n, total))

    def __str__(self) -> str:
        return f"{self.value}{'%' if self.percent else ''}"


@dataclass(frozen=True)
class Step:
    """One board's switch: the inventory's `Board` itself, carried from the plan to the smoke."""

    board: Board
    from_version: str | None
    to_version: str


@dataclass(frozen=True)
class Plan:
    to_version: str
    batches: tuple[tuple[Step, ...], ...]  # batches[0] is the canary batch when canary > 0
    canary: int
    max_failures: int  # failures tolerated; one more stops the rollout
    stagger: float  # seconds between boards' remounts inside a batch
    unchanged: tuple[Board, ...] = field(default=())  # boards already on to_version
    # Boards that run no version yet, prepared before the canary (boot config, one reboot,
    # no version) in waves paced like batches, so that their batches switch without a reboot.
    prepare: tuple[tuple[Board, ...], ...] = field(default=())

    @property
    def boards(self) -> list[Board]:
        return [s.board for b in self.batches for s in b]

    def to_dict(self) -> dict[str, object]:
        return {
            "to_version": self.to_version,
            "canary": self.canary,
            "max_failures": self.max_failures,
            "stagger": self.stagger,
            "unchanged": [b.name for b in self.unchanged],
            "prepare": [[b.name for b in wave] for wave in self.prepare],
            "batches": [
                [{"board": s.board.name, "from": s.from_version, "to": s.to_version} for s in b]
                for b in self.batches
            ],
        }


@dataclass(frozen=True)
class Pacing:
    """How many boards of an NFS server (each board's `server`) may switch at once."""

    cap: Mapping[str, int] = field(default_factory=dict)  # server -> netroot_server_reboot_batch

    def split(self, steps: Sequence[Step], size: int) -> list[tuple[Step, ...]]:
        """Batches of at most `size` steps, at most `cap` of one server each, in order."""
        batches: list[tuple[Step, ...]] = []
        todo = list(steps)
        while todo:
            taken: list[Step] = []
            per_server: dict[str, int] = {}
            for step in todo:
                if len(taken) == size:
                    break
                server = step.board.server
                if per_server.get(server, 0) >= self.cap.get(server, size):
                    continue
                per_server[server] = per_server.get(server, 0) + 1
                taken.append(step)
            batches.append(tuple(taken))
            todo = [s for s in todo if s not in taken]
        return batches


def make_plan(
    boards: Sequence[Board],
    current: Mapping[str, str | None],  # board name -> what it runs (the fleet state's keys)
    to_version: str,
    canary: int = 1,
    batch: Count = Count(1, False),
    max_fail: Count = Count(0, False),
    stagger: float = 0.0,
    pacing: Pacing | None = None,
    fresh: Collection[Board] = (),
) -> Plan:
    """Split the boards that need the new version into a canary batch then batches.

    pacing: no batch holds more boards of one NFS server than that server's cap (a boot storm
    or a reboot wave is paced per server); boards left out move to the next batch.
    fresh: boards that run no version yet and whose boot config netroot sets up with a reboot.
    With more than one batch they are prepared first, at once (waves paced the same way): the
    lab then waits for one round of reboots, not one per batch. The canary still proves the
    version before any other board gets it: a prepared board runs no version until its batch.
    """
    if canary < 0:
        raise UsageError(f"--canary {canary}: expected 0 or more")
    if stagger < 0:
        raise UsageError(f"--stagger {stagger}: expected seconds >= 0")
    todo = [b for b in boards if current.get(b.name) != to_version]
    unchanged = tuple(b for b in boards if current.get(b.name) == to_version)
    steps = [Step(b, current.get(b.name), to_version) for b in todo]
    batches: list[tuple[Step, ...]] = []
    n_canary = min(canary, len(steps))
    pace = pacing or Pacing()
    if n_canary:
        batches.extend(pace.split(steps[:n_canary], n_canary))
    rest = steps[n_canary:]
    size = batch.of(len(rest), at_least=1) if rest else 1
    batches.extend(pace.split(rest, size))
    fresh_names = {b.name for b in fresh}
    ready = [s for s in steps if s.board.name in fresh_names and s.from_version is None]
    prepare = [tuple(s.board for s in w) for w in pace.split(ready, len(ready))]
    return Plan(
        to_version=to_version,
        batches=tuple(batches),
        canary=n_canary,
        max_failures=max_fail.of(len(steps)),
        stagger=stagger,
        unchanged=unchanged,
        prepare=tuple(prepare) if len(batches) > 1 else (),
    )


@dataclass(frozen=True)
class Decision:
    go_on: bool
    reason: str


def after_batch(plan: Plan, batch_index: int, failed: int, batch_failed: int) -> Decision:
    """Whether to start the next batch, given the failures so far over the whole rollout.

    `failed` counts every board that failed so far, unreachable ones included: a board that
    cannot be reached did not verify the version (Ansible's max_fail_percentage ignores
    unreachable hosts: ansible/ansible#7686). A batch in which every board failed is decided
    here like any other, by the budget, with the budget's message (Ansible aborts the play
    there instead: ansible/ansible#76915). Any failure in the canary batch stops the rollout.
    """
    allowed = f"{plan.max_failures} allowed over the whole rollout"
    if failed > plan.max_failures:
        return Decision(False, f"failure budget spent: {failed} failed, {allowed}")
    if plan.canary and batch_index == 0 and batch_failed:
        return Decision(False, f"canary failed ({batch_failed} of {plan.canary}; {allowed})")
    if batch_index + 1 >= len(plan.batches):
        return Decision(False, "all batches done")
    return Decision(True, f"{failed} failed, {allowed}")


def defer(plan: Plan, servers: Collection[str]) -> Plan:
    """The plan with the boards of `servers` moved to one last batch: their NFS server is down,
    so they fail without being switched, and a board that cannot run the version is never the
    canary (the canary batch is refilled, in order, from the next batches)."""
    later = tuple(s for b in plan.batches for s in b if s.board.server in servers)
    if not later:
        return plan
    kept = [[s for s in b if s.board.server not in servers] for b in plan.batches]
    if plan.canary and kept:
        rest = [s for b in kept[1:] for s in b]
        while len(kept[0]) < plan.canary and rest:
            taken = rest.pop(0)
            kept[0].append(taken)
            for b in kept[1:]:
                if taken in b:
                    b.remove(taken)
    batches = (*(tuple(b) for b in kept if b), later)
    canary = min(plan.canary, len(kept[0])) if kept and kept[0] else 0
    waves = (tuple(b for b in w if b.server not in servers) for w in plan.prepare)
    prepare = tuple(w for w in waves if w)
    return replace(plan, batches=batches, canary=canary, prepare=prepare)
