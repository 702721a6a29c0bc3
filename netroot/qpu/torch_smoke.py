"""Smoke stages S12-S14: PyTorch on the QPU, checked against the CPU (after S0-S11).

S12 imports torch in a child process with a time limit, so that a torch which dies at import
(SIGILL on a Cortex-A53, the OOM killer) is diagnosed instead of killing the smoke program.
S13 registers netroot's operators (torchops) on the QPUs S0-S11 proved and checks them against
torch's CPU operators (torchcheck); S14 times the matrix-vector product on both. On the
emulator S14 claims no speed. No torch in the image: all three skip, saying so.
Stdlib-only until S12 has shown that torch imports (bundled; torchops/torchcheck travel as
source and are loaded only then).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from netroot import nfsstat
from netroot.qpu import opsrun
from netroot.qpu.smoke import Context, Stage, _stage
from netroot.remote.loader import load_bundled

IMPORT_TIMEOUT_S = 300  # a cold import from an NFS root on a Pi 3B takes tens of seconds
NO_TORCH_RC = 10
IMPORT_CHILD = """import sys
try:
    import torch
except ModuleNotFoundError as exc:
    if exc.name != "torch":
        raise
    sys.exit(10)
print(torch.__version__)
"""
SIGILL_DIAGNOSIS = (
    "killed by SIGILL at `import torch`: this torch build uses instructions a Pi 3B's "
    "Cortex-A53 (ARMv8.0) lacks, such as the ARMv8.1 LSE atomics of several aarch64 wheels "
    "(pytorch #132032, #174344)"
)
SIGILL_REMEDY = (
    "use Debian's python3-torch (bookworm, arm64) in the image, or a wheel built for armv8-a"
)
NO_TORCH = "no torch in this image (python3 cannot import torch)"
# The board's NFS client counters (netroot.nfsstat): read around the import, they say how many
# round trips it cost the network, what a real 3B on a 100 Mb/s port pays for.
NFS_COUNTERS = "/proc/net/rpc/nfs"


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


def memory_facts(gpu_mem: int) -> str:
    """The board's memory as the kernel sees it, and the GPU's share, for OOM diagnoses."""
    fields = {}
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields[key] = value.split()[0] if value.split() else ""
    except OSError as exc:
        return f"/proc/meminfo unreadable ({exc})"
    mib = {k: int(fields[k]) // 1024 for k in ("MemTotal", "MemAvailable") if k in fields}
    gpu = f"gpu_mem {gpu_mem >> 20} MiB" if gpu_mem else "gpu_mem unknown (S3 did not read it)"
    return (
        f"MemTotal {mib.get('MemTotal', '?')} MiB, MemAvailable {mib.get('MemAvailable', '?')} "
        f"MiB, {gpu} (a 3B has 1024 MiB less gpu_mem)"
    )


def s12_import(
    python: str,
    timeout_s: float,
    gpu_mem: int,
    facts: dict[str, Any] | None = None,
    counters: str = NFS_COUNTERS,
) -> tuple[Stage, bool]:
    """`import torch` in a child process: (stage, whether torch imported). Its seconds and the
    NFS operations the board's client sent meanwhile (every process's: the smoke runs alone)
    go into the line and into `facts["torch"]`."""
    before = nfs_counters(counters)
    start = time.monotonic()
    try:
        res = subprocess.run(
            [python, "-c", IMPORT_CHILD], capture_output=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return _stage(
            "S12",
            "fail",
            f"`import torch` did not finish within {timeout_s:.0f} s",
            f"import torch hung or crawled ({memory_facts(gpu_mem)})",
            "check the board's NFS root and memory; retry once the page cache is warm",
        ), False
    seconds = time.monotonic() - start
    err = res.stderr.decode(errors="replace").strip().splitlines()
    last = err[-1] if err else ""
    if res.returncode == 0:
        version = res.stdout.decode(errors="replace").strip()
        words, nfs = nfs_cost(before, nfs_counters(counters))
        if facts is not None:
            facts["torch"] = {"version": version, "import_s": round(seconds, 2), "nfs": nfs}
        return _stage("S12", "pass", f"torch {version} imported in {seconds:.1f} s, {words}"), True
    if res.returncode == NO_TORCH_RC:
        return _stage("S12", "skip", NO_TORCH), False
    if res.returncode == -signal.SIGILL:
        return _stage(
            "S12",
            "fail",
            "python3 -c 'import torch' killed by SIGILL",
            SIGILL_DIAGNOSIS,
            SIGILL_REMEDY,
        ), False
    if res.returncode == -signal.SIGKILL or "MemoryError" in last:
        how = "killed by SIGKILL (the OOM killer)" if res.returncode < 0 else last
        return _stage(
            "S12",
            "fail",
            f"python3 -c 'import torch': {how}",
            f"out of memory importing torch: {memory_facts(gpu_mem)}",
            "lower gpu_mem in the board's config.txt (128 leaves 896 MiB), stop other "
            "services, or add swap",
        ), False
    if res.returncode < 0:
        name = signal.Signals(-res.returncode).name
        return _stage(
            "S12",
            "fail",
            f"python3 -c 'import torch' killed by {name}",
            f"torch crashed at import ({name})",
            "rebuild or replace the image's torch",
        ), False
    return _stage(
        "S12",
        "fail",
        f"python3 -c 'import torch' exited {res.returncode}: {last}",
        "torch is installed but does not import",
        "fix the image's torch",
    ), False


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
    python: str = sys.executable,
    timeout_s: float = IMPORT_TIMEOUT_S,
) -> list[Stage]:
    """S12-S14 after S0-S11 (`stages`), under `policy` (auto or require)."""
    s12, present = s12_import(python, timeout_s, ctx.gpu_mem, ctx.facts)
    if not present:
        why = NO_TORCH if s12.status == "skip" else "blocked by S12 (fail)"
        return [s12, _stage("S13", "skip", why), _stage("S14", "skip", why)]
    status, reason = _blocker(stages, ctx, policy)
    if status:
        return [s12, _stage("S13", status, reason), _stage("S14", "skip", reason)]
    qpu = opsrun.QpuOps(ctx.platform, op_kernels, ctx.emulated)
    try:
        qpu.open()
    except opsrun.QpuError as exc:
        remedy = "`netroot smoke BOARD --qpu require` diagnoses the QPU"
        skip = _stage("S14", "skip", "blocked by S13 (fail)")
        return [s12, _stage("S13", "fail", str(exc), str(exc), remedy), skip]
    library: object = None  # held until S14 has run: it keeps the operators registered
    try:
        s13, library = s13_accuracy(ctx, qpu, modules)
    except Exception as exc:  # a QPU hang, or a torch/netroot bug: report it, keep the document
        s13 = _failed("S13", exc)
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
    return [s12, s13, s14]


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
