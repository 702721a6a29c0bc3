"""Reproducible trees and the cost of a repair, measured with the real Docker engine (not a test).

    PYTHONPATH=$PWD .venv/bin/python -m bench.bench_export_repair [--mib 128] [--times 3]
        [--before /work/main]

1. The same image exported --times times, each in a second of its own, alternately by layer
   dirs and by stream: how many distinct tree hashes (1 is reproducible). With --before DIR,
   the same with the netroot found in DIR (the code before the container-made rule).
2. One byte flipped in the version, then `verify` (a full re-hash) and `export --repair`
   (a re-hash, a fresh build of the source, the put-back, a re-hash), against a cold export
   of the same image in the same run: the repair's cost as a ratio of the export's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.integration.export import dockerkit

IMAGE = "netroot-bench/export-repair:1"


def netroot(code: Path, *args: str, home: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
    env |= {"NETROOT_HOME": str(home), "NO_COLOR": "1", "PYTHONPATH": str(code)}
    t = time.perf_counter()
    done = subprocess.run(
        # cwd: `python -m` puts it first on the path, before PYTHONPATH
        [sys.executable, "-m", "netroot", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=code,
    )
    return time.perf_counter() - t, done


def hashes(code: Path, work: Path, times: int) -> list[str]:
    found = []
    for i in range(times):
        time.sleep(1.05 - time.time() % 1)
        flags = ["--stream"] if i % 2 else []
        root = str(work / f"r{i}")
        _, done = netroot(code, "export", IMAGE, "--name", "b", "--root", root, "--json", *flags,
                          home=work)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        found.append(json.loads(done.stdout)["tree_hash"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--times", type=int, default=3)
    parser.add_argument("--before", type=Path)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="netroot-bench-repair-") as tmp:
        work = Path(tmp)
        dockerkit.build_bulk(work / "img", IMAGE, args.mib << 20, b"v1\n")
        out: dict[str, Any] = {"mib": args.mib}
        after = hashes(here, work / "after", args.times)
        out["distinct tree hashes, after"] = f"{len(set(after))} of {len(after)}"
        if args.before:
            before = hashes(args.before, work / "before", args.times)
            out["distinct tree hashes, before"] = f"{len(set(before))} of {len(before)}"
        root = work / "repair"
        cold, done = netroot(here, "export", IMAGE, "--name", "b", "--root", str(root), "--json",
                             home=work)  # fmt: skip
        version = Path(json.loads(done.stdout)["path"])
        victim = max((p for p in version.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
        st = victim.stat()
        with open(victim, "r+b") as f:
            f.write(b"\xff")
        os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
        verify, bad = netroot(here, "verify", "b", "--root", str(root), home=work)
        repair, fixed = netroot(here, "export", IMAGE, "--name", "b", "--repair", "--root",
                                str(root), home=work)  # fmt: skip
        _, good = netroot(here, "verify", "b", "--root", str(root), home=work)
        out |= {
            "cold export s": round(cold, 2),
            "verify (damaged) s": round(verify, 2),
            "repair s": round(repair, 2),
            "repair / export": round(repair / cold, 2),
            "verify exit codes (before, after repair)": [bad.returncode, good.returncode],
            "repair exit code": fixed.returncode,
        }
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
