"""The QPU stage of the smoke: the QPU program (S0-S14, torch's S12-S14 among them) inside each
board's version, its stages turned into checks and its summary into the board's report."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from netroot.errors import Exit, NetrootError, UsageError
from netroot.inventory import Board
from netroot.qpu import bootconfig, torch_table
from netroot.qpu.bundle import build_program
from netroot.qpu.modes import MODES
from netroot.qpu.report import QpuReport, ReportError, parse
from netroot.smoke.results import CheckResult
from netroot.smoke.stage import BoardSession, Each, ReadyBoard, StageResult, Table

EMULATED_PREFIX = "EMULATED, the GPU was not tested: "


def _label(prefix: str, message: str) -> str:
    """Prefix emulated results, unless the program already said so on that line."""
    return message if message.startswith("EMULATED") else prefix + message


def stage_checks(board: str, report: QpuReport) -> list[CheckResult]:
    """One check per stage; in emulate mode every line says the GPU was not tested."""
    prefix = EMULATED_PREFIX if report.emulated else ""
    checks = []
    for st in report.stages:
        parts = [st.evidence]
        if st.diagnosis and st.diagnosis != st.evidence:
            parts.append(st.diagnosis)
        if st.remedy and st.status in ("fail", "warn"):
            parts.append(f"remedy: {st.remedy}")
        checks.append(
            CheckResult(
                board=board,
                check=f"qpu {st.id} {st.title}",
                status=st.status,
                message=_label(prefix, " | ".join(p for p in parts if p)),
                source="qpu",
            )
        )
    return checks


def run_qpu(
    session: BoardSession, board: Board, mode: str
) -> tuple[list[CheckResult], dict[str, Any]]:
    """Send the dependency-free program over SSH; run it as root (become) with the image's python3
    in the chroot, or on a netboot board's booted root (it opens /dev/vcio and maps /dev/mem).

    The board's config.txt is read first, outside the chroot (the boot partition is not in it),
    and travels in the program for S3 to quote; emulate mode's fake board has its own.
    """
    config = None
    if mode != "emulate":
        probe = session.run(bootconfig.PROBE, timeout=60)
        config = bootconfig.parse_probe(probe.rc, probe.stdout.decode(errors="replace"))
    program = build_program(mode, boot_config=config).encode()
    python = board.mode.exec_in_version("/usr/bin/python3 -")
    # S12 alone may wait 300 s for a cold `import torch` from the NFS root.
    res = session.run_privileged(python, stdin=program, timeout=1200)
    try:
        report = parse(res.stdout.decode(errors="replace"))
    except ReportError as exc:
        err = res.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return [
            CheckResult(
                board.name, "qpu program", "fail", f"{exc} (exit {res.rc}) {err[0]}", source="qpu"
            )
        ], {}
    summary = asdict(report.summary) | {"mode": report.mode, "emulated": report.emulated}
    return stage_checks(board.name, report), summary


QpuRunner = Callable[[BoardSession, Board, str], tuple[list[CheckResult], dict[str, Any]]]


class QpuStage:
    """The QPU program on every board at once, one SSH run each (`--qpu MODE`: with "auto",
    a board the inventory says has a QPU is smoked as "require")."""

    @property
    def idle(self) -> Mapping[str, Any]:
        """A board the stage did not reach: nothing ran."""
        return {"qpu_mode": "skip", "qpu": {}}

    def __init__(self, mode: str = "auto", runner: QpuRunner = run_qpu) -> None:
        if mode not in MODES:
            raise UsageError(f"--qpu {mode!r}: expected one of {', '.join(MODES)}")
        self.mode, self.runner = mode, runner

    def run(self, boards: Sequence[ReadyBoard], each: Each) -> dict[str, StageResult]:
        return each(self.run_on)

    def run_on(self, ready: ReadyBoard) -> StageResult:
        """The program on one board; its mode and summary become the report's qpu_mode, qpu."""
        board = ready.board
        mode = "require" if (self.mode == "auto" and board.qpu) else self.mode
        if mode == "skip":
            return StageResult(summary={"qpu_mode": mode, "qpu": {}})
        try:
            checks, summary = self.runner(ready.session, board, mode)
        except NetrootError as exc:  # adapters.ssh.Unreachable, named by its exit code
            if exc.code != Exit.UNREACHABLE:
                raise
            return StageResult(summary={"qpu_mode": mode, "qpu": {}}, unreachable=exc.message)
        notes = ["QPU stages ran on the EMULATOR; the GPU was not tested"]
        if not summary.get("emulated"):
            notes = []
        tables: list[Table] = []
        torch = summary.get("torch")
        if isinstance(torch, dict):  # S12 in a line, S13's cases as a table (qpu.torch_table)
            line = torch_table.import_line(torch)
            notes += [line] if line else []
            if torch.get("cases"):
                title = torch_table.title(board.name, bool(summary.get("emulated")))
                tables.append(Table(title, torch_table.HEADERS, torch_table.rows(torch["cases"])))
        return StageResult(
            checks,
            {"qpu_mode": mode, "qpu": summary},
            notes=tuple(notes),
            tables=tuple(tables),
            collapse_skipped=True,
        )
