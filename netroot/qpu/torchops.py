"""netroot's torch operators on the QPU: `torch.ops.netroot.add`, `.mul` and `.matvec`.

Registered through `torch.library` as it is in torch 1.13 (Debian bookworm's python3-torch):
`Library("netroot", "DEF")`, `define(schema)`, `impl(name, fn, key)`. The implementations are
registered for CompositeImplicitAutograd so that they run for every device and say plainly
what is wrong (a meta or CUDA tensor gets a one-line error, not a dispatcher table); their
results carry no autograd history.

- add(a, b), mul(a, b): float32 or int32, equal shapes (no broadcasting), any size and
  layout: inputs are copied (made contiguous, padded to whole 16-lane vectors) into GPU memory.
  int32 add and multiply wrap like torch's; float32 follows the QPU's arithmetic (rounds
  toward zero, flushes denormals), so it is within one unit in the last place of torch's
  round-to-nearest result, toward zero (docs/qpu.md states the bound).
- matvec(input, weight): float32 input H x W times a weight vector of W -> H; each row's 16
  partial sums come from the QPUs and are added on the CPU.

Board-side: stdlib and torch only; shipped inside netroot's bundled programs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.library import Library

from netroot.qpu import opsrun

NAMESPACE = "netroot"
SCHEMAS = (
    "add(Tensor a, Tensor b) -> Tensor",
    "mul(Tensor a, Tensor b) -> Tensor",
    "matvec(Tensor input, Tensor weight) -> Tensor",
)
KERNEL = {
    ("add", torch.float32): "ew_fadd",
    ("add", torch.int32): "ew_add",
    ("mul", torch.float32): "ew_fmul",
    ("mul", torch.int32): "ew_imul",
}
LANES = 16


def _check(op: str, name: str, t: Any, dtypes: tuple[torch.dtype, ...]) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"netroot::{op}: {name} is a {type(t).__name__}, not a tensor")
    if t.device.type != "cpu":
        raise RuntimeError(
            f"netroot::{op}: {name} is on {t.device}; the QPU reads the ARM's memory: "
            f"pass a CPU tensor ({name}.cpu())"
        )
    if t.dtype not in dtypes:
        allowed = " or ".join(str(d).removeprefix("torch.") for d in dtypes)
        raise TypeError(
            f"netroot::{op}: {name} is {str(t.dtype).removeprefix('torch.')}; the QPU "
            f"operators take {allowed} (convert with .to(torch.{str(dtypes[0])[6:]}))"
        )


def _padded(t: torch.Tensor, length: int) -> torch.Tensor:
    flat = torch.zeros(length, dtype=t.dtype)
    flat[: t.numel()] = t.reshape(-1)
    return flat


def elementwise(qpu: opsrun.QpuOps, op: str, a: Any, b: Any) -> torch.Tensor:
    """a op b on the QPU (op "add" or "mul")."""
    _check(op, "a", a, (torch.float32, torch.int32))
    _check(op, "b", b, (torch.float32, torch.int32))
    if a.dtype != b.dtype:
        raise TypeError(
            f"netroot::{op}: a is {str(a.dtype)[6:]} and b is {str(b.dtype)[6:]}: both must be "
            "float32 or both int32"
        )
    if a.shape != b.shape:
        raise ValueError(
            f"netroot::{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} differ; the QPU "
            "operators do not broadcast: expand first (torch.broadcast_tensors(a, b))"
        )
    n = a.numel()
    if n == 0:
        return torch.empty(a.shape, dtype=a.dtype)
    vectors = -(-n // LANES)
    pairs = bytearray(vectors * opsrun.PAIR_BYTES)
    view = torch.frombuffer(pairs, dtype=a.dtype).view(vectors, 2, LANES)
    view[:, 0, :] = _padded(a, vectors * LANES).view(vectors, LANES)
    view[:, 1, :] = _padded(b, vectors * LANES).view(vectors, LANES)
    out = bytearray(qpu.elementwise(KERNEL[(op, a.dtype)], pairs, vectors))
    return torch.frombuffer(out, dtype=a.dtype)[:n].clone().view(a.shape)


def matvec(qpu: opsrun.QpuOps, inp: Any, weight: Any) -> torch.Tensor:
    """input (H x W) @ weight (W) on the QPU, float32."""
    _check("matvec", "input", inp, (torch.float32,))
    _check("matvec", "weight", weight, (torch.float32,))
    if inp.dim() != 2 or weight.dim() != 1 or inp.shape[1] != weight.shape[0]:
        raise ValueError(
            f"netroot::matvec: input {tuple(inp.shape)} and weight {tuple(weight.shape)}: "
            "expected input H x W and weight W"
        )
    height, width = inp.shape
    if height == 0 or width == 0:
        return torch.zeros(height, dtype=torch.float32)
    chunks = -(-width // LANES)
    rows = bytearray(height * chunks * opsrun.ROW_BYTES)
    torch.frombuffer(rows, dtype=torch.float32).view(height, chunks * LANES)[:, :width] = inp
    padded_weight = bytearray(chunks * opsrun.ROW_BYTES)
    torch.frombuffer(padded_weight, dtype=torch.float32)[:width] = weight
    partials = bytearray(qpu.matvec(rows, padded_weight, height, chunks))
    return torch.frombuffer(partials, dtype=torch.float32).view(height, LANES).sum(dim=1)


def register(qpu: opsrun.QpuOps) -> Library:
    """Define and implement the netroot operators on `qpu`; keep the Library alive to keep them
    (a namespace can be defined once per process)."""
    lib = Library(NAMESPACE, "DEF")
    for schema in SCHEMAS:
        lib.define(schema)
    key = "CompositeImplicitAutograd"
    lib.impl("add", lambda a, b: elementwise(qpu, "add", a, b), key)
    lib.impl("mul", lambda a, b: elementwise(qpu, "mul", a, b), key)
    lib.impl("matvec", lambda inp, weight: matvec(qpu, inp, weight), key)
    return lib


def open_registered(
    mode: str, kernels: dict[str, tuple[int, ...]]
) -> tuple[opsrun.QpuOps, Library]:
    """Open the QPUs in `mode` ("hardware" or "emulate") and register the operators on them."""
    platform, emulated = opsrun.open_platform(mode)
    qpu = opsrun.QpuOps(platform, kernels, emulated)
    qpu.open()
    try:
        return qpu, register(qpu)
    except Exception:
        qpu.close()
        raise
