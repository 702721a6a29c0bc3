"""Smoke stages S7-S11: GPU memory, the vector add on 1 and 12 QPUs, GFLOPS, cleanup.

Outputs are pre-filled with a sentinel, so the checks can tell "no DMA store" (sentinel
still there) from "wrong lanes" (the right values in other lanes). Stdlib-only (bundled).
"""

from __future__ import annotations

import errno
import struct

from netroot.qpu import layout as L
from netroot.qpu import mailbox as mb
from netroot.qpu.smoke import (
    PEAK_GFLOPS,
    Context,
    Stage,
    _stage,
    errno_text,
    map_failure,
    peak_gflops,
)

VECTOR_TIMEOUT_MS = 100
MADD_TIMEOUT_MS = 800  # the kernel's mailbox gives up after about 1 s: stay under it
LATENCY_RUNS = 5


def f32(x: float) -> int:
    """The IEEE single bits of x."""
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def as_float(bits: int) -> float:
    """The float of IEEE single bits."""
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def vector_inputs(qpu: int) -> tuple[list[int], list[int], list[int]]:
    """(A, B, expected A+B) as float bits; every lane distinct so permutations show."""
    a = [f32(float(16 * qpu + i)) for i in range(L.LANES)]
    b = [f32(1000.0 + 0.5 * i) for i in range(L.LANES)]
    c = [f32(as_float(x) + as_float(y)) for x, y in zip(a, b, strict=True)]
    return a, b, c


def diagnose_output(got: list[int], want: list[int]) -> str:
    """'' when right; else which failure the sentinel and the values point to."""
    if got == want:
        return ""
    sentinel = [i for i, w in enumerate(got) if w == L.SENTINEL]
    if len(sentinel) == len(got):
        return (
            f"no DMA store: all {len(got)} output words still hold the sentinel 0x{L.SENTINEL:08x}"
        )
    if sorted(got) == sorted(want):
        lane = next(i for i in range(len(got)) if got[i] != want[i])
        return (
            f"wrong lanes: the right values in the wrong lanes (lane {lane} holds the value "
            f"of lane {want.index(got[lane])})"
        )
    if sentinel:
        return f"partial store: lanes {sentinel} still hold the sentinel"
    lane = next(i for i in range(len(got)) if got[i] != want[i])
    return (
        f"wrong values: lane {lane} = 0x{got[lane]:08x} ({as_float(got[lane])!r}), expected "
        f"0x{want[lane]:08x} ({as_float(want[lane])!r})"
    )


def _window(ctx: Context) -> mb.PhysicalWindow:
    if ctx.window is None:
        raise RuntimeError("GPU memory used before S7 mapped it")
    return ctx.window


def s7_memory(ctx: Context) -> Stage:
    """Allocate, lock, map through /dev/mem and read a pattern back."""
    box = ctx.mailbox()
    ctx.handle = box.allocate(L.ALLOC_BYTES, 4096, mb.MEM_FLAG_DIRECT)
    if ctx.handle == 0:
        return _stage(
            "S7",
            "fail",
            f"allocate {L.ALLOC_BYTES} bytes (flags DIRECT) returned handle 0",
            f"the firmware could not allocate GPU memory: gpu_mem is "
            f"{ctx.gpu_mem >> 20} MiB (gpu_mem=16 disables 3D) or a cut-down firmware "
            "(start_cd.elf) runs",
            "set gpu_mem=64 (or more) in the board's config.txt and reboot",
        )
    ctx.bus = box.lock(ctx.handle)
    if ctx.bus == 0:
        return _stage(
            "S7",
            "fail",
            f"lock of handle {ctx.handle} returned bus address 0",
            "the firmware could not lock the allocation",
            "reboot the board",
        )
    ctx.locked = True
    phys = ctx.bus & mb.BUS_TO_PHYS
    try:
        ctx.window = ctx.platform.map_physical(phys, L.ALLOC_BYTES)
    except OSError as exc:
        return map_failure("S7", f"0x{phys:08x} (bus 0x{ctx.bus:08x})", exc)
    pattern = [(0xA5000000 | i * 0x10101) & 0xFFFFFFFF for i in range(L.ALLOC_BYTES // 4)]
    ctx.window.write_words(0, pattern)
    back = ctx.window.read_words(0, len(pattern))
    evidence = (
        f"handle {ctx.handle}, bus 0x{ctx.bus:08x} -> physical 0x{phys:08x}, "
        f"{L.ALLOC_BYTES} bytes mapped"
    )
    if back != pattern:
        bad = next(i for i in range(len(back)) if back[i] != pattern[i])
        return _stage(
            "S7",
            "fail",
            evidence,
            f"readback differs at word {bad}: the mapping does not reach the allocation",
            "check the bus-to-physical mask (bus & "
            "0x3FFFFFFF) and that the allocation used the DIRECT flag",
        )
    ctx.window.write_words(0, [0] * len(pattern))
    for name, words in ctx.kernels.items():
        ctx.window.write_words(
            L.CODE_OFFSETS[name], [h for w in words for h in (w & 0xFFFFFFFF, w >> 32)]
        )
    return _stage("S7", "pass", evidence + ", pattern read back")


def _launch(
    ctx: Context, kernel: str, uniforms: list[list[int]], timeout_ms: int
) -> tuple[str, float]:
    """Write uniforms and the control block, execute; ('', seconds) or (failure, seconds)."""
    window, n = _window(ctx), len(uniforms)
    control = []
    for q, words in enumerate(uniforms):
        window.write_words(L.UNIFORMS_OFFSET + q * L.UNIFORM_SLOT_BYTES, words)
        control += [L.uniforms_bus(ctx.bus, q), ctx.bus + L.CODE_OFFSETS[kernel]]
    window.write_words(L.CONTROL_OFFSET, control)
    start = ctx.platform.monotonic()
    try:
        reply = ctx.mailbox().execute_qpu(n, ctx.bus + L.CONTROL_OFFSET, False, timeout_ms)
    except OSError as exc:
        if exc.errno == errno.ETIMEDOUT:
            return (
                "the kernel's mailbox driver gave up waiting for the firmware "
                f"({errno_text(exc)}): the firmware is stuck"
            ), 0.0
        return f"execute failed: {errno_text(exc)}", 0.0
    elapsed = ctx.platform.monotonic() - start
    if reply == mb.EXECUTE_TIMEOUT:
        why = getattr(ctx.platform, "last_execute_reason", "")
        return (
            f"the firmware's execute timed out after {timeout_ms} ms (reply 0x80000000): "
            f"the QPU program hung{f' ({why})' if why else ''}"
        ), elapsed
    if reply != 0:
        return f"execute replied 0x{reply:08x}", elapsed
    return "", elapsed


def _failure_stage(sid: str, failure: str) -> Stage:
    if "mailbox driver gave up" in failure:
        return _stage(
            sid,
            "fail",
            failure,
            failure,
            "reboot the board: the firmware mailbox does not recover from this",
        )
    return _stage(
        sid,
        "fail",
        failure,
        failure,
        "a hung QPU usually needs a reboot; check that "
        "nothing else (the vc4 driver) uses V3D, then retry",
    )


def _vector_add(ctx: Context, n: int) -> tuple[str, list[str], float]:
    window = _window(ctx)
    uniforms, expected = [], []
    for q in range(n):
        a, b, c = vector_inputs(q)
        window.write_words(L.INPUT_OFFSET + q * L.INPUT_SLOT_BYTES, a + b)
        window.write_words(L.OUTPUT_OFFSET + q * L.OUTPUT_SLOT_BYTES, [L.SENTINEL] * L.LANES)
        uniforms.append(
            L.vector_add_uniforms(q, n, L.input_bus(ctx.bus, q), L.output_bus(ctx.bus, q))
        )
        expected.append(c)
    failure, elapsed = _launch(ctx, "vector_add", uniforms, VECTOR_TIMEOUT_MS)
    if failure:
        return failure, [], elapsed
    problems = []
    for q in range(n):
        got = window.read_words(L.OUTPUT_OFFSET + q * L.OUTPUT_SLOT_BYTES, L.LANES)
        problem = diagnose_output(got, expected[q])
        if problem:
            problems.append(f"QPU {q}: {problem}")
    return "", problems, elapsed


def s8_one_qpu(ctx: Context) -> Stage:
    """The vector add on one QPU, checked against the CPU."""
    return _vector_stage(ctx, "S8", 1)


def s9_all_qpus(ctx: Context) -> Stage:
    """The vector add on all 12 QPUs, each on its own slice of memory and VPM rows."""
    return _vector_stage(ctx, "S9", L.NUM_QPUS)


def _vector_stage(ctx: Context, sid: str, n: int) -> Stage:
    failure, problems, elapsed = _vector_add(ctx, n)
    if failure:
        return _failure_stage(sid, failure)
    what = f"{n} QPU{'s' if n > 1 else ''} x 16 lanes, output pre-filled with 0x{L.SENTINEL:08x}"
    if problems:
        return _stage(
            sid,
            "fail",
            f"{what}; {len(problems)} of {n} outputs wrong",
            "; ".join(problems),
            "compare the kernel words and uniforms with the "
            "reference guide's VPM/DMA setup formats; run --qpu emulate",
        )
    return _stage(
        sid,
        "pass",
        f"{what}: all {16 * n} results equal the CPU's, execute took {elapsed * 1000:.1f} ms",
    )


def scored_peak(ctx: Context) -> tuple[float, str]:
    """The peak S10 scores against: at the V3D clock S4 read, else at the top clock."""
    if ctx.clock_hz:
        peak = peak_gflops(ctx.clock_hz)
        return (
            peak,
            f"the {peak:.1f} GFLOPS peak at the {ctx.clock_hz / 1e6:.0f} MHz V3D clock S4 read",
        )
    return PEAK_GFLOPS, f"the {PEAK_GFLOPS} GFLOPS peak at 400 MHz (S4 read no V3D clock)"


def _clock_after(ctx: Context) -> str:
    """The V3D clock read again after the loop, when it moved (it follows load on a Pi 3)."""
    try:
        after = ctx.mailbox().clock_rate(mb.CLOCK_V3D)
    except (mb.PropertyError, OSError):
        return ""
    if not ctx.clock_hz or after == ctx.clock_hz:
        return ""
    return (
        f"; the V3D clock read {after / 1e6:.0f} MHz after the loop "
        f"(peak {peak_gflops(after):.1f} there)"
    )


def s10_gflops(ctx: Context) -> Stage:
    """Launch latency (1-QPU vector adds) and the 12-QPU multiply-add loop's GFLOPS."""
    times = []
    for _ in range(LATENCY_RUNS):
        failure, problems, elapsed = _vector_add(ctx, 1)
        if failure or problems:
            return _failure_stage("S10", failure or "; ".join(problems))
        times.append(elapsed)
    ctx.latency_s = sorted(times)[len(times) // 2]
    window, n, iters = _window(ctx), L.NUM_QPUS, ctx.madd_iterations
    for q in range(n):
        window.write_words(L.OUTPUT_OFFSET + q * L.OUTPUT_SLOT_BYTES, [L.SENTINEL] * L.LANES)
    uniforms = [L.madd_uniforms(q, n, iters, L.output_bus(ctx.bus, q)) for q in range(n)]
    failure, elapsed = _launch(ctx, "madd_loop", uniforms, MADD_TIMEOUT_MS)
    if failure:
        return _failure_stage("S10", failure)
    want = [f32(float(iters * L.MADD_ADDS_PER_ITERATION))] * L.LANES
    problems = []
    for q in range(n):
        problem = diagnose_output(
            window.read_words(L.OUTPUT_OFFSET + q * L.OUTPUT_SLOT_BYTES, 16), want
        )
        if problem:
            problems.append(f"QPU {q}: {problem}")
    flops = n * iters * L.MADD_FLOPS_PER_ITERATION
    compute = elapsed - ctx.latency_s if elapsed > 2 * ctx.latency_s else elapsed
    gflops = flops / max(compute, 1e-9) / 1e9
    peak, against = scored_peak(ctx)
    evidence = (
        f"launch latency {ctx.latency_s * 1000:.2f} ms (median of {LATENCY_RUNS}); "
        f"madd loop {n} QPUs x {iters} iterations = {flops / 1e9:.3f} GFLOP in "
        f"{elapsed * 1000:.1f} ms"
    )
    if problems:
        return _stage(
            "S10",
            "fail",
            evidence,
            "; ".join(problems),
            "the loop count is wrong: check branch offsets and delay slots against the guide",
        )
    if ctx.emulated:
        ctx.facts["emulator_gflops"] = gflops
        return _stage(
            "S10",
            "pass",
            f"{evidence}; emulator throughput {gflops * 1000:.3f} MFLOPS "
            f"(an emulator figure, not a GPU measurement; hardware is scored against {against})",
        )
    ctx.gflops = gflops
    evidence += f" -> {gflops:.2f} GFLOPS = {100 * gflops / peak:.0f}% of {against}"
    evidence += _clock_after(ctx)
    if gflops < 0.25 * peak:
        return _stage(
            "S10",
            "warn",
            evidence,
            "below a quarter of the peak at this clock",
            "check S4 (throttling) and that no other V3D user runs",
        )
    return _stage("S10", "pass", evidence)


def s11_cleanup(ctx: Context) -> Stage:
    """Unmap, unlock, release, disable and close whatever the earlier stages acquired."""
    done, errors = [], []

    def attempt(label: str, action: object) -> None:
        try:
            result = action() if callable(action) else None
            if isinstance(result, int) and result != 0:
                errors.append(f"{label} replied 0x{result:08x}")
            else:
                done.append(label)
        except Exception as exc:  # cleanup reports every failure and carries on
            errors.append(f"{label}: {type(exc).__name__}: {exc}")

    if ctx.window is not None:
        attempt("unmap", ctx.window.close)
    if ctx.mbox is not None:
        box, handle = ctx.mbox, ctx.handle
        if ctx.locked:
            attempt("unlock", lambda: box.unlock(handle))
        if handle:
            attempt("release", lambda: box.release(handle))
        if ctx.enabled:
            attempt("disable", lambda: box.enable_qpu(False))
    if ctx.transport is not None:
        attempt("close /dev/vcio", ctx.transport.close)
    if errors:
        return _stage(
            "S11",
            "warn",
            f"done: {', '.join(done) or 'nothing'}",
            "; ".join(errors),
            "reboot the board to return the GPU memory and power state",
        )
    if not done:
        return _stage("S11", "skip", "nothing to clean up")
    return _stage("S11", "pass", f"done: {', '.join(done)}")
