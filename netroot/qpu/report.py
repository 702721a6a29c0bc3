"""The QPU smoke program's JSON document as dataclasses, for `netroot smoke` to render (pure)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from netroot.qpu.modes import MODES

STATUSES = ("pass", "fail", "skip", "warn")


class ReportError(ValueError):
    """The program's output is not the document it should print; names the field."""


@dataclass(frozen=True)
class QpuStage:
    """One stage (S0-S11)."""

    id: str
    title: str
    status: str
    evidence: str
    diagnosis: str
    remedy: str


@dataclass(frozen=True)
class QpuSummary:
    """The document's summary; GFLOPS only from real hardware (None when emulated/not run)."""

    status: str
    exit_code: int
    passed: int
    failed: int
    skipped: int
    warned: int
    reason: str
    gflops: float | None
    percent_of_peak: float | None  # gflops / 38.4 GFLOPS
    peak_gflops: float
    v3d_clock_hz: int | None
    launch_latency_ms: float | None
    emulator_gflops: float | None
    board: str | None
    torch: dict[str, Any] | None = None  # S12's import and S13's cases (torch_smoke)


@dataclass(frozen=True)
class QpuReport:
    """The whole document."""

    mode: str  # as asked (netroot.qpu.modes.MODES)
    emulated: bool  # the kernels ran on netroot's emulator (emulate mode, or a FAKE board)
    note: str  # program.EMULATED when emulated, else empty
    stages: tuple[QpuStage, ...]
    summary: QpuSummary

    @property
    def failed(self) -> bool:
        """Whether any stage failed (the program exits 3)."""
        return self.summary.failed > 0


def _get(data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise ReportError(f"{where}: field {key!r} missing")
    value = data[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ReportError(f"{where}: field {key!r} = {value!r} is not {kind}")
    return value


def _opt_number(data: dict[str, Any], key: str, where: str) -> Any:
    value = data.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ReportError(f"{where}: field {key!r} = {value!r} is not a number or null")
    return value


def _stage(raw: Any, index: int) -> QpuStage:
    where = f"stages[{index}]"
    if not isinstance(raw, dict):
        raise ReportError(f"{where}: not an object")
    fields = {k: _get(raw, k, str, where) for k in QpuStage.__dataclass_fields__}
    if fields["status"] not in STATUSES:
        raise ReportError(f"{where}: status {fields['status']!r} not one of {STATUSES}")
    return QpuStage(**fields)


def from_dict(data: Any) -> QpuReport:
    """Validate and convert the parsed document."""
    if not isinstance(data, dict) or data.get("program") != "netroot-qpu-smoke":
        raise ReportError("not a netroot-qpu-smoke document")
    mode = _get(data, "mode", str, "document")
    if mode not in MODES:
        raise ReportError(f"document: mode {mode!r} not one of {MODES}")
    raw_stages = _get(data, "stages", list, "document")
    stages = tuple(_stage(raw, i) for i, raw in enumerate(raw_stages))
    s = _get(data, "summary", dict, "document")
    where = "summary"
    status = _get(s, "status", str, where)
    if status not in STATUSES:
        raise ReportError(f"summary: status {status!r} not one of {STATUSES}")
    summary = QpuSummary(
        status=status,
        exit_code=_get(s, "exit_code", int, where),
        passed=_get(s, "passed", int, where),
        failed=_get(s, "failed", int, where),
        skipped=_get(s, "skipped", int, where),
        warned=_get(s, "warned", int, where),
        reason=_get(s, "reason", str, where),
        gflops=_opt_number(s, "gflops", where),
        percent_of_peak=_opt_number(s, "percent_of_peak", where),
        peak_gflops=float(_get(s, "peak_gflops", (int, float), where)),
        v3d_clock_hz=_opt_number(s, "v3d_clock_hz", where),
        launch_latency_ms=_opt_number(s, "launch_latency_ms", where),
        emulator_gflops=_opt_number(s, "emulator_gflops", where),
        board=s.get("board") if isinstance(s.get("board"), str) else None,
        torch=s.get("torch") if isinstance(s.get("torch"), dict) else None,
    )
    emulated = _get(data, "emulated", bool, "document")
    if emulated and summary.gflops is not None:
        raise ReportError("summary: an emulated run must not report GPU GFLOPS")
    return QpuReport(mode, emulated, _get(data, "note", str, "document"), stages, summary)


def parse(text: str) -> QpuReport:
    """Parse the program's stdout (one JSON document)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"the QPU smoke program printed no JSON document: {exc}") from None
    return from_dict(data)
