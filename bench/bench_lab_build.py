"""The lab's trees built cold, one after the other as before vs at once as now (not a test).

    .venv/bin/python -m bench.bench_lab_build [--recipes board,raspbian,server,kernel] [--dir D]

In one run, into a scratch directory (never the shared cache): every tree built by
`netroot.lab.host.builds.build_all` (at once, longest first, with `images.build_options`), then the
same trees by plain mmdebstrap one after the other (how `lab up` built them before). Prints
JSON: seconds of each, the ratio, and whether each pair of trees holds the same files (path,
type, mode, owner, size, link target, the content of every regular file), so "faster" never
hides "different". Costs the cold builds twice (minutes, both cores); downloads come from the
recipes' mirror, the new way's first (whatever a proxy caches then helps the old way).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from netroot.lab import arch, recipes
from netroot.lab.host import builds
from netroot.lab.recipes import Recipe
from netroot.run import run

CHOICES: dict[str, Recipe] = {
    "board": recipes.BOARD,
    "raspbian": recipes.RASPBIAN,
    "server": recipes.SERVER,
    "kernel": arch.ARMHF.kernel,
}
# Written anew by every build whatever it holds (logs, caches keyed by time, apt's own state).
VARYING = (
    "var/log/",
    "var/cache/ldconfig/aux-cache",
    "var/cache/debconf/",
    "var/lib/dpkg/status-old",
    "var/lib/dpkg/diversions-old",
    "var/lib/apt/extended_states",
    "var/lib/dbus/machine-id",
    "etc/machine-id",
)


def _say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _plain(recipe: Recipe, out: Path) -> float:
    """mmdebstrap as `lab up` ran it before: no build options, nothing beside it."""
    tmp = out.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    t0 = time.monotonic()
    run(recipe.argv(str(out)), env={**os.environ, "TMPDIR": str(tmp)})
    return time.monotonic() - t0


def _listing(tar_path: Path) -> dict[str, tuple[Any, ...]]:
    entries: dict[str, tuple[Any, ...]] = {}
    with tarfile.open(tar_path) as tar:
        for m in tar:
            name = m.name.removeprefix("./")
            if name.startswith(VARYING):
                continue
            digest = ""
            if m.isfile():
                fh = tar.extractfile(m)
                digest = hashlib.sha256(fh.read()).hexdigest() if fh else ""
            entries[name] = (m.type, m.mode, m.uid, m.gid, m.size, m.linkname, digest)
    return entries


def _compare(a: Path, b: Path) -> dict[str, Any]:
    left, right = _listing(a), _listing(b)
    differ = sorted(n for n in left.keys() & right.keys() if left[n] != right[n])
    return {
        "files": len(left),
        "only_before": sorted(left.keys() - right.keys())[:20],
        "only_now": sorted(right.keys() - left.keys())[:20],
        "differ": differ[:20],
        "same": left == right,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--recipes", default="board,raspbian,server,kernel")
    parser.add_argument("--dir", type=Path, default=None, help="scratch dir (default: a new one)")
    args = parser.parse_args()
    chosen = [CHOICES[n] for n in args.recipes.split(",")]
    scratch = args.dir or Path(tempfile.mkdtemp(prefix="netroot-bench-build-", dir="/var/tmp"))
    before_dir, now_dir = scratch / "before", scratch / "now"
    for d in (before_dir, now_dir):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    result: dict[str, Any] = {
        "recipes": [f"{r.name}-{r.arch}" for r in chosen],
        "cores": os.cpu_count(),
    }
    # The new way first: whatever the mirror (or a proxy in front of it) caches on the first
    # download then helps the old way, so the ratio errs against the change, never for it.
    t0 = time.monotonic()
    took = builds.build_all(chosen, now_dir, _say)
    result["now_s"] = round(time.monotonic() - t0, 1)
    result["now_each_s"] = {k: round(v, 1) for k, v in took.items()}
    each: dict[str, float] = {}
    t0 = time.monotonic()
    for recipe in chosen:
        _say(f"before: {recipe.name}-{recipe.arch}, plain mmdebstrap")
        seconds = _plain(recipe, before_dir / recipe.filename)
        each[f"{recipe.name}-{recipe.arch}"] = round(seconds, 1)
    result["before_s"] = round(time.monotonic() - t0, 1)
    result["before_each_s"] = each
    result["now_over_before"] = round(result["now_s"] / result["before_s"], 3)
    result["contents"] = {
        f"{r.name}-{r.arch}": _compare(before_dir / r.filename, now_dir / r.filename)
        for r in chosen
    }
    print(json.dumps(result, indent=2))
    if args.dir is None:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
