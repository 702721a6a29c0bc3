"""Smoke stages S12-S14: PyTorch on the QPU, checked against the CPU (after S0-S11).

All three run in one child process (netroot.qpu.forked), so that torch is imported once per
smoke and a torch that dies at import (SIGILL on a Cortex-A53, the OOM killer) or hangs is
diagnosed instead of killing the smoke program. S12 is the child's `import torch`, timed, with
the NFS operations it cost; S13 registers netroot's operators (torchops) on the QPUs S0-S11
proved, opened in the child, and checks them against torch's CPU operators (torchcheck); S14
times the matrix-vector product on both. Each stage comes back over a pipe with the facts it
added; a child that dies or hangs after the import fails the stage it was in. On the emulator
S14 claims no speed. No torch in the image: all three skip, saying so. Stdlib-only until the
child has imported torch (bundled; torchops/torchcheck travel as source, loaded only then).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from netroot import nfsstat
from netroot.qpu import forked, opsrun
from netroot.qpu.smoke import Context, Stage, _stage
from netroot.qpu.torch_diagnoses import NO_TORCH, NO_TORCH_RC, died_after_import, s12_failed
from netroot.remote.loader import load_bundled

IMPORT_TIMEOUT_S = 300  # a cold import from an NFS root on a Pi 3B takes tens of seconds
# S13 and S14 together, from the end of the import: generous (S13 on the lab's emulated
# Cortex-A53 takes tens of seconds; the whole program has 1200 s, netroot.smoke.qpustage).
STAGES_TIMEOUT_S = 600
# The board's NFS client counters (netroot.nfsstat): read around the import, they say how many
# round trips it cost the network, what a real 3B on a 100 Mb/s port pays for.
NFS_COUNTERS = "/proc/net/rpc/nfs"
# What S12 and S13 add to ctx.facts in the child, sent back with each stage.
TORCH_FACTS = ("torch", "torch_worst_bound_ratio")


@dataclass(frozen=True)
class Limits:
    """The child's time limits, and where it reads the NFS counters (tests shorten, move them)."""

    import_s: float = IMPORT_TIMEOUT_S
    stages_s: float = STAGES_TIMEOUT_S
    counters: str = NFS_COUNTERS


def nfs_counters(path: str = NFS_COUNTERS) -> nfsstat.ClientCounters | None:
    """The client's counters now, or None where there is no NFS client (a local root)."""
    try:
        with open(path) as handle:
            return nfsstat.parse(handle.read())
    except (OSError, nfsstat.CountersError):
        return None


def nfs_cost(
    before: nfsstat.ClientCounters | None, after: nfsstat.ClientCounters | None
) -> tuple[str, dict[str, object] | None]:
    """What the import cost in NFS operations: (words for S12's line, the data for --json)."""
    if before is None or after is None:
        return f"NFS operations not counted ({NFS_COUNTERS} unreadable: no NFS client)", None
    try:
        spent = after - before
    except nfsstat.CountersError as exc:
        return f"NFS operations not counted ({exc})", None
    work = {k: n for k, n in spent.ops.items() if k not in nfsstat.HOUSEKEEPING}
    biggest = sorted(work.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    top = ", ".join(f"{n} {name.partition('.')[2]}" for name, n in biggest)
    return f"{spent.work()} NFS operations ({top or 'none'})", spent.summary()


def s12_import(
    start: float, before: nfsstat.ClientCounters | None, counters: str, facts: dict[str, Any]
) -> Stage | None:
    """In the child: `import torch`; S12's stage (its seconds since `start`, the NFS operations
    the board's client sent since `before`: every process's, the smoke runs alone), None when
    there is no torch. The figures also go into `facts["torch"]`."""
    try:
        torch = importlib.import_module("torch")
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        return None
    seconds = time.monotonic() - start
    version = str(torch.__version__)
    words, nfs = nfs_cost(before, nfs_counters(counters))
    facts["torch"] = {"version": version, "import_s": round(seconds, 2), "nfs": nfs}
    return _stage("S12", "pass", f"torch {version} imported in {seconds:.1f} s, {words}")


def _blocker(stages: list[Stage], ctx: Context, policy: str) -> tuple[str, str]:
    """(status, reason) when S0-S11 leave no QPU for the operators; ('', '') when they do."""
    reason = str(ctx.facts.get("no_videocore", ""))
    if reason and policy == "auto":
        return "skip", reason
    failed = next((s for s in stages if s.status == "fail"), None)
    if failed is not None:
        return "fail", f"the torch operators cannot run: blocked by {failed.id} (fail)"
    if reason:
        return "fail", f"the torch operators cannot run: {reason}"
    return "", ""


def s13_accuracy(
    ctx: Context, qpu: opsrun.QpuOps, modules: list[tuple[str, str]]
) -> tuple[Stage, object]:
    """The operators, registered on the open `qpu`, against torch's CPU operators; (stage, the
    torch Library whose lifetime is the registration's: S14 calls the operators too)."""
    load_bundled(modules)
    from netroot.qpu import torchcheck, torchops  # loaded from the bundle just now

    library = torchops.register(qpu)
    cases = torchcheck.accuracy()
    bad = [c for c in cases if not c.ok]
    worst = max((c for c in cases if c.dtype == "float32"), key=lambda c: c.bound_ratio)
    ints = [c for c in cases if c.dtype == "int32"]
    named = [f"{c.op} {c.layout}: {note}" for c in cases if c is not worst for note in c.notes()]
    evidence = (
        f"{len(cases)} cases on {qpu.executes} executes: int32 add/mul "
        f"{'WRONG' if any(not c.ok for c in ints) else 'exact'} ({len(ints)} cases); "
        f"worst float32 case {worst.describe()}" + "".join(f"; {note}" for note in named)
    )
    ctx.facts["torch_worst_bound_ratio"] = worst.bound_ratio
    ctx.facts.setdefault("torch", {})["cases"] = [case_data(c) for c in cases]
    if bad:
        return _stage(
            "S13",
            "fail",
            evidence,
            "; ".join(c.describe() for c in bad[:5]),
            "compare the op kernels with the reference guide; run --qpu emulate",
        ), library
    return _stage("S13", "pass", evidence), library


def case_data(case: Any) -> dict[str, object]:
    """One torchcheck.Case as --json keeps it: its worst error as a fraction of the bound
    (int32: 0.0 when exact, None when not: their bound is equality)."""
    exact = case.dtype != "int32" or case.ok
    return {
        "op": case.op,
        "dtype": case.dtype,
        "shape": list(case.shape),
        "layout": case.layout,
        "bound_ratio": round(case.bound_ratio, 4) if exact else None,
        "ok": case.ok,
    }


def s14_speed(ctx: Context) -> Stage:
    """matvec on the QPU against torch.mv on the CPU per size, and the break-even size."""
    if ctx.emulated:
        return _stage(
            "S14",
            "skip",
            "no speed is claimed: the emulator ran the same kernel "
            "words in S13, but its timing says nothing about a VideoCore IV",
        )
    from netroot.qpu import torchcheck

    results = torchcheck.speed()
    parts = [
        f"{r.height}x{r.width}: QPU {r.qpu_s * 1e3:.2f} ms, CPU {r.cpu_s * 1e3:.2f} ms"
        for r in results
    ]
    even = torchcheck.break_even(results)
    where = (
        f"break-even at {even.height}x{even.width} ({even.height * even.width} elements)"
        if even
        else "the QPU was not faster at any measured size"
    )
    return _stage("S14", "pass", "; ".join(parts) + "; " + where)


def run_torch_stages(
    ctx: Context,
    policy: str,
    stages: list[Stage],
    op_kernels: dict[str, tuple[int, ...]],
    modules: list[tuple[str, str]],
    limits: Limits = Limits(),
) -> list[Stage]:
    """S12-S14 after S0-S11 (`stages`), under `policy` (auto or require), in one child."""
    status, reason = _blocker(stages, ctx, policy)
    start = time.monotonic()
    before = nfs_counters(limits.counters)

    def work(send: forked.Send) -> int:
        s12 = s12_import(start, before, limits.counters, ctx.facts)
        if s12 is None:
            return NO_TORCH_RC
        _send(send, s12, ctx.facts)
        if not status:
            for stage in operator_stages(ctx, op_kernels, modules):
                _send(send, stage, ctx.facts)
        return 0

    child = forked.Child(work)
    s12 = _receive(child, start + limits.import_s, ctx.facts)
    if s12 is None:
        s12 = s12_failed(child.end(), limits.import_s, ctx.gpu_mem)
        why = NO_TORCH if s12.status == "skip" else "blocked by S12 (fail)"
        return [s12, _stage("S13", "skip", why), _stage("S14", "skip", why)]
    if status:
        child.end()
        return [s12, _stage("S13", status, reason), _stage("S14", "skip", reason)]
    deadline = time.monotonic() + limits.stages_s
    s13 = _receive(child, deadline, ctx.facts)
    if s13 is None:
        s13 = died_after_import("S13", child.end(), limits.stages_s, ctx.gpu_mem)
        return [s12, s13, _stage("S14", "skip", "blocked by S13 (fail)")]
    s14 = _receive(child, deadline, ctx.facts)
    if s14 is None:
        s14 = died_after_import("S14", child.end(), limits.stages_s, ctx.gpu_mem)
    child.end()
    return [s12, s13, s14]


def _send(send: forked.Send, stage: Stage, facts: dict[str, Any]) -> None:
    """A stage and the torch facts as they stand, from the child to the parent."""
    send({"stage": asdict(stage), "facts": {k: facts[k] for k in TORCH_FACTS if k in facts}})


def _receive(child: forked.Child, deadline: float, facts: dict[str, Any]) -> Stage | None:
    """The child's next stage, its facts merged into `facts`; None when the child ended first
    or the deadline passed."""
    message = child.receive(deadline)
    if message is None:
        return None
    facts.update(message["facts"])
    return Stage(**message["stage"])


def operator_stages(
    ctx: Context, op_kernels: dict[str, tuple[int, ...]], modules: list[tuple[str, str]]
) -> Iterator[Stage]:
    """In the child, after torch imported: S13, then S14 once the QPUs it opened are closed."""
    qpu = opsrun.QpuOps(ctx.platform, op_kernels, ctx.emulated)
    try:
        qpu.open()
    except opsrun.QpuError as exc:
        remedy = "`netroot smoke BOARD --qpu require` diagnoses the QPU"
        yield _stage("S13", "fail", str(exc), str(exc), remedy)
        yield _stage("S14", "skip", "blocked by S13 (fail)")
        return
    library: object = None  # held until S14 has run: it keeps the operators registered
    try:
        s13, library = s13_accuracy(ctx, qpu, modules)
    except Exception as exc:  # a QPU hang, or a torch/netroot bug: report it, keep the document
        s13 = _failed("S13", exc)
    yield s13
    try:
        s14 = s14_speed(ctx) if s13.status == "pass" else _stage("S14", "skip", "blocked by S13")
    except Exception as exc:
        s14 = _failed("S14", exc)
    try:
        qpu.close()
    except opsrun.QpuError as exc:
        status = "fail" if s14.status == "fail" else "warn"
        s14 = _stage("S14", status, s14.evidence, str(exc), "reboot the board")
    del library
    yield s14


def _failed(sid: str, exc: Exception) -> Stage:
    if isinstance(exc, opsrun.QpuError):
        return _stage(sid, "fail", str(exc), str(exc), "a hung QPU needs a reboot")
    return _stage(
        sid,
        "fail",
        f"internal error: {type(exc).__name__}: {exc}",
        "the torch operators or their check failed",
        "report this as a bug",
    )
