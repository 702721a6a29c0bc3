"""How close netroot::matvec comes to its documented error bound, per width (not a test).

The bound (docs/qpu.md): |q - c| <= 1.52 W 2^-23 sum_j |a_ij x_j| + W FLT_MIN, c torch's CPU
result, q the QPU's. This runs torchcheck's own per-case check (`torchcheck._matvec_case`, the
one S13 uses) on netroot's operators registered on the emulator (EMULATED: the kernel words ran
on netroot's emulator, whose float arithmetic matches VC4C's hardware captures), under
/usr/bin/python3 with Debian's python3-torch, for matrices of `--rows` rows per width and seed:

- random: torchcheck's inputs (uniform in [-1, 1] times 2^-6..2^6, both signs), as S13 uses;
- positive: the same magnitudes, all positive (every product and partial sum of a row then
  leans the same way under round toward zero: the errors cannot cancel).

Prints JSON: per width the largest |q - c| / bound over all rows and seeds, for both kinds, and
the analytic largest ratio of a 1-wide matvec, 1 / 1.52: one product rounded toward zero is at
most one unit in the last place (ulp) from torch's, and an ulp is at most 2^-23 |c|.

Run: .venv/bin/python bench/bench_qpu_bound.py [--rows 64] [--seeds 4] [--widths 1,15,...]

Measured 2026-12-07 (x86-64, Debian's torch 1.13.1, defaults, 8 s; docs/qpu.md, "The error
bound", has the whole table), worst fraction of the bound, random / positive:
  W = 1: 0.656 / 0.656 (analytic maximum 0.658); 2: 0.404 / 0.500; 4: 0.225 / 0.225;
  8: 0.131 / 0.135; 15: 0.104 / 0.093; 16: 0.096 / 0.093; 17: 0.113 / 0.113;
  32: 0.048 / 0.060; 64: 0.035 / 0.058; 100: 0.036 / 0.036; 363: 0.018 / 0.020.
The seeds are fixed: a rerun on the same torch prints the same figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from netroot.qpu import bundle

PYTHON = "/usr/bin/python3"
WIDTHS = (1, 2, 3, 4, 8, 15, 16, 17, 32, 64, 100, 200, 363)
BODY = """
import json, torch
from netroot.qpu import torchcheck as t
out = {{"emulated": EMULATED, "w1_analytic_max": 1 / t.MATVEC_FACTOR, "widths": {{}}}}
for width in {widths!r}:
    worst = {{"random": 0.0, "positive": 0.0}}
    for seed in range({seeds}):
        gen = torch.Generator().manual_seed(1000 * width + seed)
        a, x = t._floats(gen, {rows}, width), t._floats(gen, width)
        for kind, (aa, xx) in (("random", (a, x)), ("positive", (a.abs(), x.abs()))):
            case = t._matvec_case(aa, xx, kind)
            worst[kind] = max(worst[kind], case.bound_ratio)
    out["widths"][width] = worst
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    args = parser.parse_args()
    widths = tuple(int(w) for w in args.widths.split(","))
    body = BODY.format(widths=widths, seeds=args.seeds, rows=args.rows)
    script = bundle.build_torch_script("emulate", body)
    done = subprocess.run(
        [PYTHON, "-I", "-"], input=script, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"bench_qpu_bound: {PYTHON} failed (needs Debian's python3-torch): "
                 f"{done.stderr.strip().splitlines()[-1:]}")  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
