"""The seed's checks of netroot's torch operators: accuracy against torch's CPU operators, and
the matrix-vector product's speed against the CPU's (board-side: stdlib and torch).

Bounds (docs/qpu.md, from QPU.md's sources), for finite normal inputs, c = torch's CPU result:
- int32 add and multiply: exact (both wrap modulo 2^32).
- float32 add and multiply: |q - c| <= 2^-23 |c| + FLT_MIN. The QPU rounds toward zero where
  the CPU rounds to nearest, so q is c or one unit in the last place closer to zero; below
  FLT_MIN the QPU flushes to +0.
- float32 matvec of width W: |q - c| <= 1.52 W 2^-23 sum_j |a_ij x_j| + W FLT_MIN (each product
  and sum is rounded toward zero, so the errors lean one way and add up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

ULP = 2.0**-23
FLT_MIN = 1.1754943508222875e-38
MATVEC_FACTOR = 1.52
ELEMENTWISE_SIZES = (1, 15, 16, 17, 100, 1000)
MATVEC_SHAPES = ((1, 1), (3, 17), (7, 37), (16, 100), (33, 200))
SPEED_WIDTHS = (10, 100, 1000, 10_000, 100_000)
SPEED_HEIGHT = 100


@dataclass(frozen=True)
class Case:
    """One operator on one input: its worst error and the bound it must stay within."""

    op: str
    dtype: str
    shape: tuple[int, ...]
    layout: str  # "contiguous" or "transposed"
    worst: float  # largest |q - c|
    bound_ratio: float  # largest |q - c| / bound (ints: 0 when exact, inf otherwise)

    @property
    def ok(self) -> bool:
        """Within the bound (ints: exactly equal)."""
        return self.bound_ratio <= 1.0

    def describe(self) -> str:
        """One line for reports."""
        shape = "x".join(map(str, self.shape))
        what = f"{self.op} {self.dtype} {shape} {self.layout}"
        if self.dtype == "int32":
            return f"{what}: {'exact' if self.ok else f'differs by up to {self.worst:.0f}'}"
        return f"{what}: worst |q-c| {self.worst:.3g} = {self.bound_ratio:.2f} of the bound"


def _ops() -> Any:
    return torch.ops.netroot


def _floats(gen: torch.Generator, *shape: int) -> torch.Tensor:
    # Magnitudes over a few binades, both signs: rounding differences show at every scale.
    scale = torch.pow(2.0, torch.randint(-6, 7, shape, generator=gen).float())
    return (torch.rand(shape, generator=gen) * 2 - 1) * scale


def _ints(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randint(-(2**31), 2**31 - 1, shape, generator=gen, dtype=torch.int32)


def _elementwise_case(op: str, a: torch.Tensor, b: torch.Tensor, layout: str) -> Case:
    q = getattr(_ops(), op)(a, b)
    c = a + b if op == "add" else a * b
    dtype = str(a.dtype).removeprefix("torch.")
    if a.dtype == torch.int32:
        diff = (q.long() - c.long()).abs().max().item() if q.numel() else 0
        return Case(
            op, dtype, tuple(a.shape), layout, float(diff), 0.0 if diff == 0 else float("inf")
        )
    err = (q.double() - c.double()).abs()
    bound = c.double().abs() * ULP + FLT_MIN
    return Case(op, dtype, tuple(a.shape), layout, err.max().item(), (err / bound).max().item())


def _matvec_case(a: torch.Tensor, x: torch.Tensor, layout: str) -> Case:
    q = _ops().matvec(a, x)
    c = torch.mv(a, x)
    width = a.shape[1]
    err = (q.double() - c.double()).abs()
    bound = MATVEC_FACTOR * width * ULP * (a.double().abs() @ x.double().abs()) + width * FLT_MIN
    return Case(
        "matvec", "float32", tuple(a.shape), layout, err.max().item(), (err / bound).max().item()
    )


def accuracy(seed: int = 20) -> list[Case]:
    """Every operator, both dtypes, the sizes above (odd ones too), contiguous and not."""
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for n in ELEMENTWISE_SIZES:
        for make in (_floats, _ints):
            for op in ("add", "mul"):
                cases.append(_elementwise_case(op, make(gen, n), make(gen, n), "contiguous"))
    for make in (_floats, _ints):  # non-contiguous: transposed views
        a, b = make(gen, 5, 7).t(), make(gen, 5, 7).t()
        for op in ("add", "mul"):
            cases.append(_elementwise_case(op, a, b, "transposed"))
    for height, width in MATVEC_SHAPES:
        cases.append(_matvec_case(_floats(gen, height, width), _floats(gen, width), "contiguous"))
    cases.append(_matvec_case(_floats(gen, 19, 6).t(), _floats(gen, 19), "transposed"))
    return cases


@dataclass(frozen=True)
class Speed:
    """The matvec at one size: seconds per call on the QPU (netroot::matvec) and the CPU."""

    height: int
    width: int
    qpu_s: float
    cpu_s: float


def _best(fn: Any, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def speed(
    widths: tuple[int, ...] = SPEED_WIDTHS, height: int = SPEED_HEIGHT, runs: int = 3
) -> list[Speed]:
    """QPU against CPU for the matvec per size (best of `runs`, copies to GPU memory included)."""
    gen = torch.Generator().manual_seed(7)
    out = []
    for width in widths:
        a, x = _floats(gen, height, width), _floats(gen, width)
        qpu = _best(lambda a=a, x=x: _ops().matvec(a, x), runs)
        cpu = _best(lambda a=a, x=x: torch.mv(a, x), runs)
        out.append(Speed(height, width, qpu, cpu))
    return out


def break_even(results: list[Speed]) -> Speed | None:
    """The smallest size from which on the QPU is faster at every measured size, if any."""
    for i, r in enumerate(results):
        if all(s.qpu_s < s.cpu_s for s in results[i:]):
            return r
    return None
