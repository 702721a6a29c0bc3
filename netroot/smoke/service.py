"""Run the smoke checks: testinfra inside each board's chroot (a pytest subprocess), then QPU."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from netroot.adapters.ssh import (
    BecomeRefused,
    Session,
    Unreachable,
    become_problem,
    sudo_refused,
)
from netroot.errors import UsageError
from netroot.inventory import Board, Inventory
from netroot.qpu.modes import MODES as QPU_MODES
from netroot.smoke.report import BoardReport, CheckResult, SmokeReport
from netroot.sshtarget import target_for

BUILTIN_CHECKS = Path(__file__).resolve().parent / "checks" / "test_netroot_builtin.py"

QpuRunner = Callable[[Session, Board, str], tuple[list[CheckResult], dict[str, Any]]]


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


def _run_checks(
    inv: Inventory,
    boards: list[Board],
    checks_dir: Path | None,
    expected: dict[str, dict[str, Any]],
    log: Callable[[str], None],
) -> dict[str, list[CheckResult]]:
    """One pytest process for all `boards`: collected once, then one forked worker per board
    (netroot/smoke/workers.py), so the boards run at the same time, each isolated."""
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


def _run_qpu(
    board: Board,
    session: Session,
    report: BoardReport,
    qpu_mode: str,
    qpu_runner: QpuRunner | None,
) -> None:
    mode = "require" if (qpu_mode == "auto" and board.qpu) else qpu_mode
    report.qpu_mode = mode
    if mode == "skip" or qpu_runner is None:
        return
    try:
        checks, report.qpu_summary = qpu_runner(session, board, mode)
        report.checks.extend(checks)
    except Unreachable as exc:
        report.reachable, report.error = False, exc.message


def run_smoke(
    inv: Inventory,
    boards: list[Board],
    *,
    checks_dir: Path | None = None,
    qpu_mode: str = "auto",
    expected: dict[str, dict[str, Any]] | None = None,
    qpu_runner: QpuRunner | None = None,
    log: Callable[[str], None] = lambda _line: None,
) -> SmokeReport:
    """Smoke every board in parallel; an unreachable board is reported, the others still run.

    Each board is probed (reachable, root, provisioned), then the checks of every board that
    passed run in one pytest process, then the QPU smoke test. With qpu_mode "auto", a board
    the inventory says has a QPU is smoked as "require".
    """
    if qpu_mode not in QPU_MODES:
        raise UsageError(f"--qpu {qpu_mode!r}: expected one of {', '.join(QPU_MODES)}")
    if checks_dir is not None and not checks_dir.is_dir():
        raise UsageError(f"--checks {checks_dir}: not a directory of testinfra test files")
    if not boards:
        return SmokeReport([])
    # One SSH connection per board for the probe and the QPU program (a new connection costs
    # a key exchange and a login on the board); the checks run in their own process.
    sessions = {b.name: Session(target_for(b.host)) for b in boards}
    pool = ThreadPoolExecutor(max_workers=max(1, min(8, len(boards))))
    try:
        reports = list(pool.map(lambda b: _probe(b, sessions[b.name]), boards))
        ready = [(b, r) for b, r in zip(boards, reports, strict=True) if r.status == "pass"]
        if not ready:
            return SmokeReport(reports)
        checked = _run_checks(inv, [b for b, _ in ready], checks_dir, expected or {}, log)
        for board, report in ready:
            report.checks.extend(checked[board.name])
        runs = [
            pool.submit(_run_qpu, b, sessions[b.name], r, qpu_mode, qpu_runner) for b, r in ready
        ]
        for run in runs:
            run.result()
    except BaseException:
        # Ctrl-C: do not wait for the workers still waiting on a silent board.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=False)  # every worker is done here, or abandoned above
        for session in sessions.values():
            session.close()
    return SmokeReport(reports)
