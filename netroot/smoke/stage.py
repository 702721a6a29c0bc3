"""What a smoke stage is: what it is handed, what it returns (pure).

The smoke probes every board (reachable, root, provisioned), then runs its stages in order on
the boards that passed: the built-in and user testinfra checks, the QPU program (S0-S14, the
torch stages among them), ... (`netroot.smoke.stages.stages`, the one list). A stage returns,
per board, its checks and its summary: the fields it adds to the board's JSON report. Adding a
stage costs its module and one entry in that list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from netroot.inventory import Board
from netroot.smoke.facts import BoardResult
from netroot.smoke.results import CheckResult


class BoardSession(Protocol):
    """What a stage may do with its SSH session to the board (netroot.adapters.ssh.Session,
    opened by the smoke): it reaches the board through nothing else."""

    def run(
        self, command: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> BoardResult: ...

    def run_privileged(
        self, command: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> BoardResult: ...


class ReadyBoard(NamedTuple):
    """A board that passed the probe, with the session the probe opened (reused: a new SSH
    connection costs a key exchange and a login on the board)."""

    board: Board
    session: BoardSession


@dataclass(frozen=True)
class SmokeSettings:
    """What the command line asked of the smoke (`netroot smoke`, and a rollout's smokes)."""

    checks_dir: Path | None = None  # --checks: the user's testinfra files
    qpu_mode: str = "auto"  # --qpu (netroot.qpu.modes.MODES)


class Table(NamedTuple):
    """A short table a stage shows after the checks (the JSON keeps its data in the summary)."""

    title: str
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class StageResult:
    """One stage on one board."""

    checks: list[CheckResult] = field(default_factory=list)
    # The stage's fields in the board's JSON report (its summary), in order.
    summary: Mapping[str, Any] = field(default_factory=dict)
    # Set when the board stopped answering during the stage: why (the board is unreachable).
    unreachable: str = ""
    # Human lines for after the table (the JSON does not carry them).
    notes: tuple[str, ...] = ()
    # Tables for after the checks' table (the JSON does not carry them either).
    tables: tuple[Table, ...] = ()
    # When every check of the stage skipped on a board, the table shows one row for them
    # (checks named "<source> <id> <title>": "qpu S0-S11"); JSON and JUnit keep every check.
    collapse_skipped: bool = False


# Runs a per-board function on every ready board at once (a thread each), in the boards' order.
Each = Callable[[Callable[[ReadyBoard], StageResult]], dict[str, StageResult]]


class SmokeStage(Protocol):
    """A stage of the smoke."""

    @property
    def idle(self) -> Mapping[str, Any]:
        """Its fields in the JSON of a board it did not run on (unreachable, failed the probe)."""
        ...

    def run(self, boards: Sequence[ReadyBoard], each: Each) -> dict[str, StageResult]:
        """Run on `boards` (all at once: through `each`, or in a process of its own); a result
        per board name. Raise UsageError for input the user must fix (nothing is recorded)."""
        ...
