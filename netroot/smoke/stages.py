"""The smoke's stages, in order, and the run over them: probe every board, then each stage on
the boards that passed. The built-in stage (testinfra in each board's version, one pytest
process for all boards) lives here; the others in their own modules (netroot.smoke.qpustage).

Adding a stage: its module (a class with `idle` and `run`, netroot/smoke/stage.py) and one
entry in `stages()`. An option of its own also goes into `stage.SmokeSettings` and the command
line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from netroot import threadwait
from netroot.adapters.become import BecomeRefused, become_problem, sudo_refused
from netroot.adapters.ssh import Session, Unreachable
from netroot.errors import UsageError
from netroot.inventory import Board, Inventory
from netroot.smoke.qpustage import QpuStage
from netroot.smoke.results import BoardReport, CheckResult, SmokeReport
from netroot.smoke.stage import Each, ReadyBoard, SmokeSettings, SmokeStage, StageResult
from netroot.sshtarget import target_for

BUILTIN_CHECKS = Path(__file__).resolve().parent / "checks" / "test_netroot_builtin.py"
Log = Callable[[str], None]


def stages(
    settings: SmokeSettings, inv: Inventory, expected: Mapping[str, Mapping[str, Any]], log: Log
) -> list[SmokeStage]:
    """The smoke's stages, in the order they run (and their checks in each board's report)."""
    qpu = QpuStage(settings.qpu_mode)  # first: a bad --qpu is named before a bad --checks
    return [BoardChecks(inv, settings.checks_dir, expected, log), qpu]


def _probe(board: Board, session: Session) -> BoardReport:
    """Reachable, root through become, and provisioned: one round trip (the become check rides
    on it; a user whose sudo wants a password raises BecomeRefused, one line)."""
    report = BoardReport(board.name)
    target = session.target
    problem = become_problem(target, None, "")
    if problem:
        raise BecomeRefused(target, problem)
    try:
        res = session.run_privileged(board.mode.version_probe, timeout=60)
        refused = sudo_refused(target, res.rc, res.stderr.decode(errors="replace"))
        if refused:
            raise BecomeRefused(target, refused)
        missing = board.mode.version_root_missing(board.name) if res.rc != 0 else ""
        if missing:
            report.checks.append(
                CheckResult(board.name, "netroot_chroot_installed", "fail", missing)
            )
    except Unreachable as exc:
        report.reachable = False
        report.error = exc.message
    return report


class BoardChecks:
    """The built-in checks and the user's (--checks) in each board's version: one pytest
    process for all the boards, collected once, then one forked worker per board
    (netroot/smoke/workers.py), so the boards run at the same time, each isolated."""

    @property
    def idle(self) -> Mapping[str, Any]:
        return {}  # it adds checks only

    def __init__(
        self,
        inv: Inventory,
        checks_dir: Path | None,
        expected: Mapping[str, Mapping[str, Any]],
        log: Log,
    ) -> None:
        if checks_dir is not None and not checks_dir.is_dir():
            raise UsageError(f"--checks {checks_dir}: not a directory of testinfra test files")
        self.inv, self.checks_dir, self.expected, self.log = inv, checks_dir, expected, log

    def run(self, boards: Sequence[ReadyBoard], each: Each) -> dict[str, StageResult]:
        checked = _run_checks(
            self.inv, [b.board for b in boards], self.checks_dir, dict(self.expected), self.log
        )
        return {name: StageResult(checks) for name, checks in checked.items()}


def _run_checks(
    inv: Inventory,
    boards: list[Board],
    checks_dir: Path | None,
    expected: dict[str, Any],
    log: Log,
) -> dict[str, list[CheckResult]]:
    """One pytest process for all `boards`: their checks, by board name."""
    with tempfile.TemporaryDirectory(prefix="netroot-smoke-") as tmp:
        tmpdir = Path(tmp)
        (tmpdir / "expected.json").write_text(json.dumps(expected))
        (tmpdir / "pytest.ini").write_text("[pytest]\n")
        results = tmpdir / "results.json"
        paths = [str(BUILTIN_CHECKS)]
        if checks_dir is not None:
            paths.append(str(checks_dir.resolve()))
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "netroot.smoke.plugin",
            "-p",
            "no:cacheprovider",
            "-c",
            str(tmpdir / "pytest.ini"),
            "--rootdir",
            str(tmpdir),
            "-q",
            "--capture=sys",  # per-process capture, as the forked workers need
            "--netroot-workers",
            "--hosts=" + ",".join(f"netroot://{b.name}" for b in boards),
            f"--ansible-inventory={inv.path.resolve()}",
            f"--netroot-expected={tmpdir / 'expected.json'}",
            f"--netroot-results={results}",
            *paths,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        names = ", ".join(b.name for b in boards)
        if proc.returncode not in (0, 1) or not results.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
            raise UsageError(
                f"the smoke checks could not run on {names}: {tail[0]}",
                "check the files given with --checks (they must be testinfra test files)",
            )
        rows = json.loads(results.read_text())
    out: dict[str, list[CheckResult]] = {b.name: [] for b in boards}
    for r in rows:
        # A check that takes no `host` ran once, in the session: it counts for every board.
        for board in out if r["board"] not in out else [r["board"]]:
            out[board].append(
                CheckResult(
                    board=board,
                    check=r["check"],
                    status=r["status"],
                    message=r["message"],
                    seconds=r["seconds"],
                    source="builtin" if r["file"] == BUILTIN_CHECKS.name else f"user:{r['file']}",
                )
            )
    for board, checks in out.items():
        counts = Counter(c.status for c in checks)
        log(f"{board}: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return out


def run_smoke(
    inv: Inventory,
    boards: list[Board],
    settings: SmokeSettings = SmokeSettings(),
    *,
    expected: Mapping[str, Mapping[str, Any]] | None = None,
    log: Log = lambda _line: None,
) -> SmokeReport:
    """Smoke every board in parallel; an unreachable board is reported, the others still run.

    Each board is probed (reachable, root, provisioned), then every stage runs, in order, on
    the boards that passed the probe and are still reachable.
    """
    order = stages(settings, inv, expected or {}, log)
    if not boards:
        return SmokeReport([])
    # One SSH connection per board for the probe and the stages that use a session (a new
    # connection costs a key exchange and a login on the board); testinfra has its own.
    sessions = {b.name: Session(target_for(b.host)) for b in boards}
    pool = ThreadPoolExecutor(max_workers=max(1, min(8, len(boards))))
    try:
        # Not pool.map: its wait would not notice a Ctrl-C a worker thread took (threadwait).
        reports = threadwait.results([pool.submit(_probe, b, sessions[b.name]) for b in boards])
        for report in reports:
            for stage in order:
                report.summary.update(stage.idle)
        ready = {b.name: r for b, r in zip(boards, reports, strict=True) if r.status == "pass"}
        for stage in order:
            going = [ReadyBoard(b, sessions[b.name]) for b in boards if _still(ready, b.name)]
            if not going:
                break
            results = stage.run(going, _each(pool, going))
            for name, result in results.items():
                _record(ready[name], result)
    except BaseException:
        # Ctrl-C: do not wait for the workers still waiting on a silent board.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=False)  # every worker is done here, or abandoned above
        for session in sessions.values():
            session.close()
    return SmokeReport(reports)


def _still(ready: Mapping[str, BoardReport], name: str) -> bool:
    """Passed the probe, and no stage has lost it since (a failed check does not stop it)."""
    return name in ready and ready[name].reachable


def _each(pool: ThreadPoolExecutor, boards: Sequence[ReadyBoard]) -> Each:
    def each(run_on: Callable[[ReadyBoard], StageResult]) -> dict[str, StageResult]:
        runs = [pool.submit(run_on, b) for b in boards]
        return dict(zip((b.board.name for b in boards), threadwait.results(runs), strict=True))

    return each


def _record(report: BoardReport, result: StageResult) -> None:
    """A stage's result on one board, into that board's report."""
    report.checks.extend(result.checks)
    report.summary.update(result.summary)
    report.notes.extend(result.notes)
    report.tables.extend(result.tables)
    if result.collapse_skipped:
        report.collapsed.update(c.source for c in result.checks)
    if result.unreachable:
        report.reachable, report.error = False, result.unreachable
