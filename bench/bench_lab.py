"""Times of the virtual lab (not a test): armhf vs arm64 boards, booted vs resumed.

    .venv/bin/python -m bench.bench_lab [--boards 3] [--arches armhf,arm64] [--resume] [--cold]

Measures, in one run and for each board arch (armhf: Debian's armmp-lpae kernel on a Cortex-A15,
`armv7l` like 32-bit Raspberry Pi OS, the default; arm64: Debian's arm64 kernel on a Cortex-A53,
the 64-bit case): `lab up --boot` of N boards to "all hosts ssh-ready", the first provision of
pi-01 (server exports, scripts, the version mounted, config.txt managed and the reboot it needs),
then `netroot smoke pi-01`, and each board's RSS. Ratios armhf/arm64 come from the same run.
With --resume, also `lab down` (saving state) and `lab up` again for the last arch (resume vs
boot). With --cold, the lab's build cache is removed first and the first `up` builds everything
from Debian's archive (minutes). Stops a running lab first, leaves the lab up at the end of the
last arch; prints JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from typing import Any

from bench.labcmd import netroot_on_lab
from netroot import paths
from netroot.lab import arch
from netroot.lab.host import service
from netroot.lab.plan import RASPBIAN_IMAGE


def _quiet(msg: str) -> None:
    print(f"[lab] {msg}", file=sys.stderr, flush=True)


def _rss() -> dict[str, float | None]:
    return {h.name: h.rss_mib for h in service.status().hosts if h.role == "board"}


def _timed_up(boards: int, boot: bool, kind: arch.BoardArch) -> float:
    t0 = time.monotonic()
    service.up(boards, _quiet, boot=boot, arch=kind)
    return time.monotonic() - t0


def _one_arch(kind: arch.BoardArch, boards: int) -> dict[str, Any]:
    # A fresh disk per arch: the boards' disks are overlays of that arch's base disk.
    service.down(_quiet, save=False)
    out: dict[str, Any] = {"boot_up_s": round(_timed_up(boards, True, kind), 1)}
    out["rss_mib_after_boot"] = _rss()
    netroot_on_lab("export", RASPBIAN_IMAGE, "--name", "raspbian")
    out["first_provision_pi01_s"] = round(netroot_on_lab("provision", "pi-01"), 1)
    out["smoke_pi01_s"] = round(netroot_on_lab("smoke", "pi-01"), 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=3)
    parser.add_argument("--arches", default="armhf,arm64")
    parser.add_argument("--resume", action="store_true", help="also time down + resumed up")
    parser.add_argument("--cold", action="store_true", help="empty the build cache first")
    args = parser.parse_args()
    kinds = [arch.by_name(a) for a in args.arches.split(",")]
    result: dict[str, Any] = {"boards": args.boards}
    service.down(_quiet, save=False)
    if args.cold:
        shutil.rmtree(paths.cache_dir() / "lab", ignore_errors=True)
        for tag in ("netroot-lab/server:bookworm", "netroot-lab/raspbian:bookworm"):
            subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)
        result["cold_up_s"] = round(_timed_up(args.boards, True, kinds[0]), 1)
    for kind in kinds:
        result[kind.name] = _one_arch(kind, args.boards)
    if {"armhf", "arm64"} <= set(result):
        for key in ("boot_up_s", "first_provision_pi01_s", "smoke_pi01_s"):
            result[f"armhf_vs_arm64_{key}"] = round(result["armhf"][key] / result["arm64"][key], 2)
    if args.resume:
        last = result[kinds[-1].name]
        t0 = time.monotonic()
        service.down(_quiet, save=True)
        last["down_with_save_s"] = round(time.monotonic() - t0, 1)
        last["resume_up_s"] = round(_timed_up(args.boards, False, kinds[-1]), 1)
        last["resume_vs_boot"] = round(last["resume_up_s"] / last["boot_up_s"], 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
