"""The smoke program's driver: modes, stage sequencing, the JSON document and the exit code.

Modes: auto (no VideoCore IV -> stages skipped with the reason), require (same -> failure),
skip (nothing touched), emulate (a FAKE healthy Pi 3B whose mailbox runs the kernel on the
emulator; every human line says so). Exit 0 when nothing failed, 3 when a stage failed.
Stdlib-only (bundled): `python3 -` on the board runs `main()` of the bundle.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

from netroot.qpu import mailbox as mb
from netroot.qpu import smoke, smoke_exec, torch_smoke
from netroot.qpu.bootconfig import BootConfig
from netroot.qpu.modes import check_mode
from netroot.qpu.smoke import Context, NoVideoCore, Stage, StageFn, _stage

EMULATED = "EMULATED — the GPU was not tested"
HARDWARE_MADD_ITERATIONS = 256_000  # ~50 ms at the 38.4 GFLOPS peak: well under 1 s
EMULATED_MADD_ITERATIONS = 2
EXIT_OK, EXIT_FAILED = 0, 3
STAGES: tuple[tuple[str, StageFn], ...] = (
    ("S0", smoke.s0_devices), ("S1", smoke.s1_board), ("S2", smoke.s2_firmware),
    ("S3", smoke.s3_ownership), ("S4", smoke.s4_clock), ("S5", smoke.s5_enable),
    ("S6", smoke.s6_identity), ("S7", smoke_exec.s7_memory), ("S8", smoke_exec.s8_one_qpu),
    ("S9", smoke_exec.s9_all_qpus), ("S10", smoke_exec.s10_gflops),
)  # fmt: skip


def run_stages(ctx: Context, policy: str) -> list[Stage]:
    """S0-S10 in order (a failure or a missing VideoCore blocks the rest), then S11 always."""
    results: list[Stage] = []
    blocked = ""
    for sid, fn in STAGES:
        if blocked:
            results.append(_stage(sid, "skip", blocked))
            continue
        try:
            stage = fn(ctx)
        except NoVideoCore as exc:
            status = "skip" if policy == "auto" else "fail"
            ctx.facts["no_videocore"] = exc.reason
            diagnosis = (
                exc.reason
                if status == "skip"
                else (f"{exc.reason}, but --qpu require (or the inventory) expects a VideoCore IV")
            )
            stage = _stage(sid, status, exc.reason, diagnosis, exc.remedy)
            blocked = exc.reason if status == "skip" else f"blocked by {sid} (fail)"
        except mb.PropertyError as exc:
            stage = _stage(
                sid,
                "fail",
                f"mailbox error: {exc}",
                _property_diagnosis(exc),
                "run on real Raspberry Pi firmware; reboot if the mailbox is stuck",
            )
        except OSError as exc:
            stage = _stage(
                sid,
                "fail",
                f"{smoke.errno_text(exc)}",
                f"system call failed: {smoke.errno_text(exc)}",
                "see the errno; reboot if the mailbox is stuck",
            )
        except Exception as exc:  # an emulator rejection or a bug: report, then clean up
            stage = _stage(
                sid,
                "fail",
                f"internal error: {type(exc).__name__}: {exc}",
                "the smoke program or its emulator failed",
                "report this as a bug",
            )
        results.append(stage)
        if stage.status == "fail" and not blocked:
            blocked = f"blocked by {sid} (fail)"
    results.append(smoke_exec.s11_cleanup(ctx))
    return results


def _property_diagnosis(exc: mb.PropertyError) -> str:
    if exc.kind == "empty":
        return "the firmware answered with an empty reply: QEMU-style emulated firmware"
    return f"the firmware mailbox failed ({exc.kind})"


def _mark_emulated(stage: Stage) -> Stage:
    def mark(text: str) -> str:
        return f"{EMULATED}: {text}" if text else text

    return Stage(
        stage.id,
        stage.title,
        stage.status,
        mark(stage.evidence) or EMULATED,
        mark(stage.diagnosis),
        mark(stage.remedy),
    )


def document(mode: str, stages: list[Stage], ctx: Context | None) -> dict[str, Any]:
    """The JSON document the program prints: stages plus a summary."""
    counts = {
        s: sum(1 for st in stages if st.status == s) for s in ("pass", "fail", "skip", "warn")
    }
    status = (
        "fail"
        if counts["fail"]
        else "warn"
        if counts["warn"]
        else ("pass" if counts["pass"] else "skip")
    )
    facts = ctx.facts if ctx else {}
    peak = smoke_exec.scored_peak(ctx)[0] if ctx else smoke.PEAK_GFLOPS
    summary: dict[str, Any] = {
        "status": status,
        "exit_code": EXIT_FAILED if counts["fail"] else EXIT_OK,
        "passed": counts["pass"],
        "failed": counts["fail"],
        "skipped": counts["skip"],
        "warned": counts["warn"],
        "reason": facts.get("no_videocore", ""),
        "gflops": ctx.gflops if ctx else None,
        "percent_of_peak": (round(100 * ctx.gflops / peak, 1) if ctx and ctx.gflops else None),
        "peak_gflops": round(peak, 2),
        "v3d_clock_hz": ctx.clock_hz if ctx and ctx.clock_hz else None,
        "launch_latency_ms": ctx.latency_s * 1000 if ctx and ctx.latency_s else None,
        "emulator_gflops": facts.get("emulator_gflops"),
        "board": facts.get("board"),
        "torch": facts.get("torch"),  # S12's import (seconds, NFS operations), S13's cases
    }
    emulated = bool(ctx and ctx.emulated)
    return {
        "program": "netroot-qpu-smoke",
        "format": 1,
        "mode": mode,
        "emulated": emulated,
        "note": EMULATED if emulated else "",
        "stages": [asdict(s) for s in stages],
        "summary": summary,
    }


def run(
    mode: str,
    platform: mb.Platform | None,
    kernels: dict[str, tuple[int, ...]],
    madd_iterations: int | None = None,
    torch: tuple[dict[str, tuple[int, ...]], list[tuple[str, str]]] | None = None,
) -> dict[str, Any]:
    """Run the smoke test in `mode` on `platform`; the JSON-ready document.

    `torch` is (operator kernels, torchops/torchcheck sources): S12-S14 run after S11.
    """
    if check_mode(mode) == "skip" or platform is None:
        stages = [
            _stage(sid, "skip", "--qpu skip: the QPU smoke test was not run")
            for sid in smoke.TITLES
        ]
        return document(mode, stages, None)
    # A FAKE board is emulated whatever the mode: its numbers are never the GPU's.
    emulated = mode == "emulate" or bool(getattr(platform, "emulated", False))
    iterations = madd_iterations or (
        EMULATED_MADD_ITERATIONS if emulated else HARDWARE_MADD_ITERATIONS
    )
    ctx = Context(platform, kernels, iterations, emulated=emulated)
    policy = "require" if mode == "emulate" else mode
    stages = run_stages(ctx, policy)
    if torch is not None:
        stages += torch_smoke.run_torch_stages(ctx, policy, stages, *torch)
    if emulated:
        stages = [_mark_emulated(s) for s in stages]
    return document(mode, stages, ctx)


def main(
    mode: str,
    kernels: dict[str, tuple[int, ...]],
    scenario: str = "healthy",
    boot_config: tuple[str, str] | None = None,
    torch: tuple[dict[str, tuple[int, ...]], list[tuple[str, str]]] | None = None,
) -> int:
    """Entry point of the bundled program: print the document, a line per stage on stderr.

    `torch` is (operator kernels, torchops/torchcheck sources) for S12-S14, None without them.
    `boot_config` is (path, text) of the board's config.txt as the host read it, or None.
    """
    if hasattr(sys.stderr, "reconfigure"):  # a non-UTF-8 locale must not kill the report
        sys.stderr.reconfigure(errors="backslashreplace")
    platform: mb.Platform | None
    if mode == "emulate":
        from netroot.qpu.fake import FakeBoard  # only the emulate bundle carries it

        platform = FakeBoard(scenario)
    else:
        config = BootConfig(*boot_config) if boot_config else None
        platform = mb.LocalPlatform(config)
    try:
        doc = run(mode, platform, kernels, torch=torch)
    except ValueError as exc:
        print(f"netroot-qpu-smoke: {exc}", file=sys.stderr)
        return 2
    for st in doc["stages"]:
        line = f"{st['id']:>3} {st['status']:<4} {st['title']}: {st['evidence']}"
        if st["diagnosis"] and st["diagnosis"] != st["evidence"]:
            line += f" | {st['diagnosis']}"
        print(line, file=sys.stderr)
    if doc["emulated"]:
        print(f"summary: {doc['summary']['status']} — {EMULATED}", file=sys.stderr)
    print(json.dumps(doc, indent=1))
    return int(doc["summary"]["exit_code"])
