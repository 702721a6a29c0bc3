"""`.ci/demo` phase by phase: cold, with the artifacts cached, and run a second time (not a test).

    flock /tmp/netroot-lab.lock .venv/bin/python -m bench.bench_demo [--boards 3] [--runs ...]

Runs the demo itself (`bash .ci/demo`) and reads the summary it ends with ("where the time
went"), in one run of this bench:
  cold    an empty build cache (NETROOT_CACHE) and a lab that never ran (NETROOT_HOME): the
          first run on a fresh machine, apart from apt and, without --with-images, the two
          Docker images (their labels already match the recipes, so they are not rebuilt;
          --with-images removes them first, so the run builds them as a fresh machine does);
  cached  the cache the cold run filled (without `cold` in --runs: this machine's own cache,
          read only when it already holds every artifact), a lab that never ran: what a new
          lab costs;
  second  the demo again on the running lab of `cached`: what a second run skips.
Each run's lab home is a scratch one, so the user's lab is never touched; a running lab is
stopped first (one lab per machine) and the bench's lab stopped at the end. The lab lock allows
25 minutes: run `--runs cold` and `--runs cached,second` as two commands on a busy machine.
Prints JSON (seconds per phase, totals, second/cached and cached/cold ratios) on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NETROOT = [str(ROOT / ".venv" / "bin" / "netroot")]
PHASE = re.compile(r"^\s*(\d+) s  (.+)$")


def _say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _lab_down(env: dict[str, str]) -> None:
    subprocess.run([*NETROOT, "lab", "down"], env=env, check=False, capture_output=True)


def parse_summary(stderr: str) -> dict[str, int]:
    """The demo's "where the time went" lines as label -> seconds."""
    _, _, tail = stderr.rpartition("where the time went")
    phases: dict[str, int] = {}
    for line in tail.splitlines():
        m = PHASE.match(line)
        if m:
            phases[m.group(2).strip()] = int(m.group(1))
    return phases


def _demo(env: dict[str, str], log: Path) -> dict[str, Any]:
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", str(ROOT / ".ci" / "demo")], env=env, capture_output=True, text=True, check=False
    )
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    return {
        "rc": proc.returncode,
        "wall_s": round(time.monotonic() - t0, 1),
        "phases_s": parse_summary(proc.stderr),
        "log": str(log),
    }


def _remove_lab_images() -> None:
    """The lab's Docker images (tags; other tags keep their layers): the cold run builds them."""
    from netroot.lab.plan import RASPBIAN_IMAGE, RASPBIAN_TORCH_IMAGE, SERVER_IMAGE

    for ref in (SERVER_IMAGE, RASPBIAN_IMAGE, RASPBIAN_TORCH_IMAGE):
        proc = subprocess.run(["docker", "image", "rm", ref], capture_output=True, text=True)
        _say(f"removed {ref}" if proc.returncode == 0 else f"{ref}: {proc.stderr.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=3)
    parser.add_argument("--runs", default="cold,cached,second")
    parser.add_argument("--keep", action="store_true", help="keep the scratch dir (logs)")
    parser.add_argument(
        "--with-images",
        action="store_true",
        help="cold: remove the lab's two Docker images first, so the run builds them too",
    )
    args = parser.parse_args()
    runs = args.runs.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="netroot-bench-demo-", dir="/var/tmp"))
    base = {**os.environ, "BOARDS": str(args.boards), "NO_COLOR": "1", "COLUMNS": "120"}
    from netroot.paths import cache_dir

    cache = scratch / "cache" if "cold" in runs else cache_dir()
    _lab_down({k: v for k, v in base.items() if k not in ("NETROOT_HOME", "NETROOT_CACHE")})
    result: dict[str, Any] = {"boards": args.boards, "cores": os.cpu_count(), "runs": {}}
    env: dict[str, str] = {}
    try:
        for name in runs:
            if name in ("cold", "cached"):
                if env:
                    _lab_down(env)  # one lab per machine: the previous run's goes first
                home = scratch / f"home-{name}"
                env = {**base, "NETROOT_HOME": str(home), "NETROOT_CACHE": str(cache)}
            elif not env:
                raise SystemExit("--runs: 'second' needs a run before it")
            if name == "cold" and args.with_images:
                _remove_lab_images()
            _say(f"{name}: bash .ci/demo (BOARDS={args.boards})")
            result["runs"][name] = _demo(env, scratch / f"{name}.log")
            _say(f"{name}: {result['runs'][name]['wall_s']} s, rc {result['runs'][name]['rc']}")
    finally:
        if env:
            _lab_down(env)
    walls = {n: r["wall_s"] for n, r in result["runs"].items()}
    if "cold" in walls and "cached" in walls:
        result["cached_over_cold"] = round(walls["cached"] / walls["cold"], 3)
    if "cached" in walls and "second" in walls:
        result["second_over_cached"] = round(walls["second"] / walls["cached"], 3)
    print(json.dumps(result, indent=2))
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
