"""Run the QPU smoke program inside a board's chroot and turn its stages into checks."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Protocol

from netroot.inventory import Board
from netroot.qpu import bootconfig
from netroot.qpu.bundle import build_program
from netroot.qpu.report import QpuReport, ReportError, parse
from netroot.smoke.facts import BoardResult
from netroot.smoke.report import CheckResult

EMULATED_PREFIX = "EMULATED, the GPU was not tested: "


class BoardSession(Protocol):
    """What the QPU stage needs of its SSH session to the board (netroot.adapters.ssh.Session,
    handed in by the smoke service): it reaches the board through nothing else."""

    def run(
        self, command: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> BoardResult: ...

    def run_privileged(
        self, command: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> BoardResult: ...


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
