"""How fast the QPU emulator runs the smoke kernels (the `--qpu emulate` cost on a board).

Prints JSON: milliseconds per run (median of N) for the 12-QPU vector add, the 1-QPU vector
add and the 12-QPU multiply-add loop (2 iterations, as emulate mode runs it), and each as a
ratio to a baseline measured in the same run (16-lane tuple additions done in plain Python,
the emulator's unit of work), so runs on different machines compare. The board's armhf python
under QEMU TCG is roughly 50x slower than native; multiply the native figures accordingly.

Run: .venv/bin/python bench/bench_qpu_emulator.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import struct
import time
from collections.abc import Callable

from netroot.qpu import asm, kernels, layout
from netroot.qpu.emulator import Machine, Memory
from netroot.qpu.smoke_exec import vector_inputs

PHYS = 0x1E000000


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1000


def _rig() -> tuple[Machine, bytearray, int]:
    memory = Memory()
    buf = memory.add_region(PHYS, layout.ALLOC_BYTES)
    for k in kernels.all_kernels().values():
        words = asm.to_words32(list(k.words))
        struct.pack_into(f"<{len(words)}I", buf, layout.CODE_OFFSETS[k.name], *words)
    return Machine(memory), buf, 0xC0000000 | PHYS


def _launcher(kernel: str, n: int) -> Callable[[], object]:
    machine, buf, base = _rig()
    control = []
    for q in range(n):
        a, b, _ = vector_inputs(q)
        struct.pack_into("<32I", buf, layout.INPUT_OFFSET + q * layout.INPUT_SLOT_BYTES, *a, *b)
        out = layout.output_bus(base, q)
        if kernel == "vector_add":
            u = layout.vector_add_uniforms(q, n, layout.input_bus(base, q), out)
        else:
            u = layout.madd_uniforms(q, n, 2, out)
        struct.pack_into(f"<{len(u)}I", buf, layout.UNIFORMS_OFFSET + q * 64, *u)
        control += [layout.uniforms_bus(base, q), base + layout.CODE_OFFSETS[kernel]]
    struct.pack_into(f"<{len(control)}I", buf, layout.CONTROL_OFFSET, *control)

    def launch() -> object:
        result = machine.execute(n, base + layout.CONTROL_OFFSET, 10**6)
        assert result.completed, result.reason
        return result

    return launch


def _baseline() -> None:
    a, b = tuple(range(16)), tuple(range(16, 32))
    for _ in range(1000):
        a = tuple((x + y) & 0xFFFFFFFF for x, y in zip(a, b, strict=True))


def main() -> None:
    """Measure and print the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    base_ms = _median_ms(_baseline, runs)
    cases = {
        "vector_add_12_qpus": _launcher("vector_add", 12),
        "vector_add_1_qpu": _launcher("vector_add", 1),
        "madd_loop_12_qpus_2_iterations": _launcher("madd_loop", 12),
    }
    report: dict[str, object] = {"baseline_1000_lane_adds_ms": round(base_ms, 3), "runs": runs}
    for name, fn in cases.items():
        instructions = fn().instructions  # type: ignore[attr-defined]
        ms = _median_ms(fn, runs)
        report[name] = {
            "ms": round(ms, 3),
            "instructions": instructions,
            "us_per_instruction": round(1000 * ms / instructions, 2),
            "ratio_to_baseline": round(ms / base_ms, 2),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
