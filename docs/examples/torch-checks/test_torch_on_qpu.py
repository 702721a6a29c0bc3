"""Your own smoke checks: netroot's torch operators on the board against torch on its CPU.

The seed's checks as testinfra checks: the QPU's product equals torch's `a * b` (integers
exactly, float32 within one unit in the last place toward zero), and every operator
(netroot::add, ::mul, ::matvec) over several sizes stays within the bound docs/qpu.md states.
Each check sends the operators (netroot.qpu.bundle.torch_command) to the board and runs them
with the image's /usr/bin/python3 inside the chroot.

    netroot smoke pi-01 --checks docs/examples/torch-checks
    NETROOT_TORCH_QPU=hardware netroot smoke pi-01 --checks docs/examples/torch-checks

Without NETROOT_TORCH_QPU=hardware the kernels run on netroot's emulator on the board (no
VideoCore IV needed, no GPU tested: failures say EMULATED). With it, on a Pi 3B whose QPUs
`netroot smoke --qpu require` has shown working.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from netroot.qpu.bundle import torch_command

PRODUCT = """
import json, torch
g = torch.Generator().manual_seed(1)
a, b = torch.rand(1000, generator=g) * 200 - 100, torch.rand(1000, generator=g) * 200 - 100
q, c = torch.ops.netroot.mul(a, b), a * b
one_step = torch.nextafter(c, torch.zeros_like(c))
i, j = (torch.randint(-2**31, 2**31 - 1, (1000,), generator=g, dtype=torch.int32)
        for _ in range(2))
print(json.dumps({"emulated": EMULATED,
                  "float_ok": bool(((q == c) | (q == one_step)).all()),
                  "int_ok": bool(torch.equal(torch.ops.netroot.mul(i, j), i * j))}))
"""
ACCURACY = """
import json
from netroot.qpu import torchcheck
print(json.dumps({"emulated": EMULATED,
                  "cases": [[c.describe(), c.ok] for c in torchcheck.accuracy()]}))
"""


def _run(host: Any, body: str) -> dict[str, Any]:
    probe = host.run("/usr/bin/python3 -c 'import torch'")
    if "ModuleNotFoundError" in probe.stderr:
        pytest.skip("no torch in this image")
    assert probe.rc == 0, f"import torch failed (rc {probe.rc}): see the smoke's S12"
    res = host.run(torch_command(os.environ.get("NETROOT_TORCH_QPU", "emulate"), body))
    assert res.rc == 0, res.stderr.strip().splitlines()[-1:]
    doc: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return doc


def _label(doc: dict[str, Any]) -> str:
    return "EMULATED, the GPU was not tested: " if doc["emulated"] else ""


def test_qpu_product_equals_torch_mul(host: Any) -> None:
    doc = _run(host, PRODUCT)
    assert doc["int_ok"], _label(doc) + "int32 netroot::mul differs from a * b"
    assert doc["float_ok"], _label(doc) + "float32 netroot::mul beyond one step toward zero"


def test_every_operator_within_the_stated_bound(host: Any) -> None:
    doc = _run(host, ACCURACY)
    bad = [line for line, ok in doc["cases"] if not ok]
    assert not bad, _label(doc) + "; ".join(bad)
