"""Times of `netroot lab up` with 3 boards: booted vs resumed, and memory per board (not a test).

    .venv/bin/python -m bench.bench_lab [--boards 3] [--cold]

Measures, in one run: `lab up --boot` (every board boots its own systemd under TCG) and
`lab up` after `lab down` (boards resume their saved state), each as seconds to "all hosts
ssh-ready", their ratio, and each board's RSS after `up`. With --cold, the lab's cache
(rootfs tars, kernel, initramfs, base disk, images) is removed first and the first `up` also
builds everything from Debian's archive (minutes). Stops a running lab first and leaves
the lab up at the end; prints JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from typing import Any

from netroot import paths
from netroot.lab import service


def _quiet(msg: str) -> None:
    print(f"[lab] {msg}", flush=True)


def _rss() -> dict[str, float | None]:
    return {h.name: h.rss_mib for h in service.status().hosts if h.role == "board"}


def _timed_up(boards: int, boot: bool) -> float:
    t0 = time.monotonic()
    service.up(boards, _quiet, boot=boot)
    return time.monotonic() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="empty the build cache first")
    args = parser.parse_args()
    result: dict[str, Any] = {"boards": args.boards}
    service.down(_quiet, save=False)
    if args.cold:
        shutil.rmtree(paths.cache_dir() / "lab", ignore_errors=True)
        for tag in ("netroot-lab/server:bookworm", "netroot-lab/raspbian:bookworm"):
            subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)
        result["cold_up_s"] = round(_timed_up(args.boards, boot=True), 1)
        service.down(_quiet, save=False)
    result["boot_up_s"] = round(_timed_up(args.boards, boot=True), 1)
    result["rss_mib_after_boot"] = _rss()
    t0 = time.monotonic()
    service.down(_quiet, save=True)
    result["down_with_save_s"] = round(time.monotonic() - t0, 1)
    result["resume_up_s"] = round(_timed_up(args.boards, boot=False), 1)
    result["rss_mib_after_resume"] = _rss()
    result["resume_vs_boot"] = round(result["resume_up_s"] / result["boot_up_s"], 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
