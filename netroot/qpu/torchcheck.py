"""The seed's checks of netroot's torch operators: accuracy against torch's CPU operators, and
the matrix-vector product's speed against the CPU's (board-side: stdlib and torch).

Bounds (docs/qpu.md, from QPU.md's sources), for finite normal inputs, c = torch's CPU result:
- int32 add and multiply: exact (both wrap modulo 2^32).
- float32 add and multiply: |q - c| <= 2^-23 |c| + FLT_MIN. The QPU rounds toward zero where
  the CPU rounds to nearest, so q is c or one unit in the last place closer to zero; below
  FLT_MIN the QPU flushes to +0.
- float32 matvec of width W: |q - c| <= 1.52 W 2^-23 sum_j |a_ij x_j| + W FLT_MIN (each product
  and sum is rounded toward zero, so the errors lean one way and add up).
Overflow, as the QPU does it: rounding toward zero turns an exact result in (FLT_MAX, 2^128) into
+-FLT_MAX where torch's round-to-nearest gives +-Inf; such results are counted and named
("saturated"), not errors. A matvec row with sum_j |a_ij x_j| > FLT_MAX is outside the bound
(one of its 16 lane partials may overflow, e.g. +Inf in one lane and -Inf in another make NaN
where torch says 0): such rows are named with their index and both results, not checked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

ULP = 2.0**-23
FLT_MIN = 1.1754943508222875e-38
FLT_MAX = 3.4028234663852886e38
TWO_128 = 2.0**128
INF = float("inf")
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
    layout: str  # "contiguous", "transposed" or "near FLT_MAX"
    worst: float  # largest |q - c| over the results the bound covers
    bound_ratio: float  # largest |q - c| / bound (ints: 0 when exact, inf otherwise)
    saturated: int = 0  # results +-FLT_MAX where torch says +-Inf (the QPU's round toward zero)
    outside: tuple[str, ...] = ()  # matvec rows outside the bound, each described

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
        line = f"{what}: worst |q-c| {self.worst:.3g} = {self.bound_ratio:.2f} of the bound"
        return line + "".join(f"; {note}" for note in self.notes())

    def notes(self) -> list[str]:
        """What the bound leaves out, by name: saturation, rows outside its domain."""
        notes = []
        if self.saturated:
            notes.append(
                f"{self.saturated} saturated to +-FLT_MAX where torch says +-Inf (the QPU "
                "rounds an exact result in (FLT_MAX, 2^128) toward zero)"
            )
        shown = self.outside[:3]
        more = f" (+{len(self.outside) - 3} more)" if len(self.outside) > 3 else ""
        notes.extend((*shown[:-1], shown[-1] + more) if shown else ())
        return notes


def _ops() -> Any:
    return torch.ops.netroot


def _floats(gen: torch.Generator, *shape: int) -> torch.Tensor:
    # Magnitudes over a few binades, both signs: rounding differences show at every scale.
    scale = torch.pow(2.0, torch.randint(-6, 7, shape, generator=gen).float())
    return (torch.rand(shape, generator=gen) * 2 - 1) * scale


def _ints(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randint(-(2**31), 2**31 - 1, shape, generator=gen, dtype=torch.int32)


def _near_max(gen: torch.Generator, op: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    # Operands whose exact results straddle FLT_MAX and 2^128, both signs: an exact result in
    # (FLT_MAX, 2^128) is +-FLT_MAX on the QPU and +-Inf in torch once it reaches FLT_MAX +
    # half a unit. add: FLT_MAX plus 0..2 units of its last place (2^104); mul: a random a
    # near 2^64 and the float32 nearest 2^128 / a, whose exact product is within a unit of 2^128.
    sign = (torch.rand(n, generator=gen) < 0.5).float() * -2 + 1
    if op == "add":
        steps = torch.randint(0, 9, (n,), generator=gen).double() * 0.25
        return torch.full((n,), FLT_MAX) * sign, (steps * 2.0**104).float() * sign
    a = (1 + torch.rand(n, generator=gen)) * 2.0**64
    return a * sign, (TWO_128 / a.double()).float()


def _float_errors(
    q: torch.Tensor, c: torch.Tensor, exact: torch.Tensor, bound: torch.Tensor
) -> tuple[float, float, int]:
    """(worst |q - c|, worst |q - c| / bound, how many saturated) over float results.

    Equal results count as no error (infinities too: q == c); a result the QPU saturated to
    +-FLT_MAX where torch says +-Inf, for an exact result in (FLT_MAX, 2^128), is counted, not an
    error; any other infinite c, or a NaN q, is an infinite error."""
    qd, cd = q.double(), c.double()
    saturated = (
        cd.isinf()
        & (qd.abs() == FLT_MAX)
        & (torch.sign(qd) == torch.sign(cd))
        & (exact.abs() > FLT_MAX)
        & (exact.abs() < TWO_128)
    )
    zero = torch.zeros_like(qd)
    err = torch.where(
        (qd == cd) | saturated, zero, torch.nan_to_num((qd - cd).abs(), nan=INF, posinf=INF)
    )
    ratio = torch.where(err == 0, zero, err / torch.where(cd.isfinite(), bound, zero))
    if not err.numel():
        return 0.0, 0.0, 0
    return err.max().item(), ratio.max().item(), int(saturated.sum().item())


def _elementwise_case(op: str, a: torch.Tensor, b: torch.Tensor, layout: str) -> Case:
    q = getattr(_ops(), op)(a, b)
    c = a + b if op == "add" else a * b
    dtype = str(a.dtype).removeprefix("torch.")
    if a.dtype == torch.int32:
        diff = (q.long() - c.long()).abs().max().item() if q.numel() else 0
        return Case(
            op, dtype, tuple(a.shape), layout, float(diff), 0.0 if diff == 0 else float("inf")
        )
    exact = a.double() + b.double() if op == "add" else a.double() * b.double()
    bound = c.double().abs() * ULP + FLT_MIN
    worst, ratio, saturated = _float_errors(q, c, exact, bound)
    return Case(op, dtype, tuple(a.shape), layout, worst, ratio, saturated)


def _matvec_case(a: torch.Tensor, x: torch.Tensor, layout: str) -> Case:
    q = _ops().matvec(a, x)
    c = torch.mv(a, x)
    width = a.shape[1]
    total = a.double().abs() @ x.double().abs()
    inside = total <= FLT_MAX  # then no lane partial, nor their sum, can reach 2^128
    outside = tuple(
        f"row {i} outside the bound (sum_j |a_ij x_j| {total[i].item():.3g} > FLT_MAX): QPU "
        f"{q[i].item():.6g}, torch {c[i].item():.6g}"
        + (" (a lane partial overflowed)" if not q[i].isfinite() and c[i].isfinite() else "")
        for i in (~inside).nonzero().flatten().tolist()
    )
    bound = MATVEC_FACTOR * width * ULP * total + width * FLT_MIN
    exact = a.double() @ x.double()
    worst, ratio, saturated = _float_errors(q[inside], c[inside], exact[inside], bound[inside])
    return Case("matvec", "float32", tuple(a.shape), layout, worst, ratio, saturated, outside)


def _lane_overflow_rows(width: int) -> tuple[torch.Tensor, torch.Tensor]:
    # Row 0 large but inside the bound (sum |a x| = FLT_MAX / 2); row 1 (M, -M, M, ...) with
    # M = 1.5 x 2^127: each QPU lane adds two Ms of one sign and overflows, +Inf in even lanes,
    # -Inf in odd ones, NaN in all, where torch's sum is 0: outside the bound, named.
    big = torch.full((width,), FLT_MAX / 2 / width)
    m = 1.5 * 2.0**127
    alternating = torch.tensor([m if j % 2 == 0 else -m for j in range(width)])
    return torch.stack([big, alternating]), torch.ones(width)


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
    for op in ("add", "mul"):  # overflow: where rounding toward zero and to nearest part ways
        cases.append(_elementwise_case(op, *_near_max(gen, op, 64), "near FLT_MAX"))
    cases.append(_matvec_case(*_lane_overflow_rows(32), "near FLT_MAX"))
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
