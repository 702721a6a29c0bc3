"""The lab's two NFS servers side by side (not a test): NFS-Ganesha in a container against
nfs-kernel-server in a Debian x86_64 VM under TCG (`lab up --server kernel`).

    .venv/bin/python -m bench.bench_lab_server [--boards 2] [--servers ganesha,kernel]

For each server, in one run on the same machine: `lab down --no-save`, then `lab up --boot` of N
boards timed to "every host ssh-ready" and to nfs-01 alone ssh-ready, then the export of the
lab image (not timed; for the kernel server onto its own disk over SSH, a remote export root),
the first provision of pi-01 (the server's exports) and a smoke of pi-01.
Artifacts are built before the clock starts. Prints JSON with the ratios kernel/ganesha on
stdout; leaves the lab up with the last server.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

from bench.labcmd import netroot_on_lab
from netroot.lab.host import service
from netroot.lab.plan import RASPBIAN_IMAGE, SERVER_NAME

KEYS = ("up_s", "server_ready_s", "first_provision_pi01_s", "smoke_pi01_s")


def _one(server: str, boards: int) -> dict[str, Any]:
    ready: dict[str, float] = {}

    def report(msg: str) -> None:
        print(f"[lab] {msg}", file=sys.stderr, flush=True)
        found = re.match(rf"{SERVER_NAME} ssh-ready \(([\d.]+) s\)", msg)
        if found:
            ready["server"] = float(found.group(1))

    service.down(report, save=False)
    service.build_artifacts(report, server_kind=server)
    t0 = time.monotonic()
    service.up(boards, report, boot=True, server_kind=server)
    out: dict[str, Any] = {"up_s": round(time.monotonic() - t0, 1)}
    # Measured from the boot of the first machine, as `lab up` reports it.
    out["server_ready_s"] = ready.get("server")
    netroot_on_lab("export", RASPBIAN_IMAGE, "--name", "raspbian")
    out["first_provision_pi01_s"] = round(netroot_on_lab("provision", "pi-01"), 1)
    out["smoke_pi01_s"] = round(netroot_on_lab("smoke", "pi-01"), 1)
    out["server_rss_mib"] = next(
        (h.rss_mib for h in service.status().hosts if h.role == "server"), None
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--boards", type=int, default=2)
    parser.add_argument("--servers", default="ganesha,kernel")
    args = parser.parse_args()
    result: dict[str, Any] = {"boards": args.boards}
    for server in args.servers.split(","):
        result[server] = _one(server, args.boards)
    if {"ganesha", "kernel"} <= set(result):
        for key in KEYS:
            k, g = result["kernel"][key], result["ganesha"][key]
            result[f"kernel_vs_ganesha_{key}"] = round(k / g, 2) if k and g else None
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
