"""What PyTorch costs a board and the export (not a test), on a running arm64 lab.

    .venv/bin/python -m bench.bench_torch [--board pi-01] [--runs 3] [--export]

Needs `netroot lab up --arch arm64` with the board provisioned with the torch image
(netroot-lab/raspbian-torch:bookworm). Measures on the board, inside its chroot: `import torch`
from the NFS root cold (the board's page cache dropped first) and warm, against the same
interpreter starting without torch (the baseline, same run, same board: ratios carry over to
a real 3B, seconds do not); the board's memory (MemTotal, MemAvailable) and the process's peak
RSS after `import torch` and after one netroot operator (EMULATED: the lab has no VideoCore IV).
With --export: exporting the torch image, then a one-layer change of it (seconds, ratio).
Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.labcmd import netroot_on_lab
from netroot import paths
from netroot.adapters.ssh import Session
from netroot.inventory import load
from netroot.qpu.bundle import torch_command
from netroot.smoke.backend import in_version
from netroot.sshtarget import target_for

TORCH_IMAGE = "netroot-lab/raspbian-torch:bookworm"
TIMED = "import time; t = time.monotonic(); {what}; print(time.monotonic() - t)"
MEMORY = """
import json, resource
def meminfo():
    fields = dict(line.split(':', 1) for line in open('/proc/meminfo'))
    return {k: int(fields[k].split()[0]) // 1024 for k in ('MemTotal', 'MemAvailable')}
before = meminfo()
import torch
after_import = meminfo()
rss_import = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
q = torch.ops.netroot.matvec(torch.ones(100, 1000), torch.ones(1000))
print(json.dumps({"before": before, "after_import": after_import,
                  "after_operator": meminfo(), "peak_rss_mib_after_import": rss_import,
                  "peak_rss_mib_after_operator":
                      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                  "operator_emulated": EMULATED}))
"""


def _python(session: Session, board: Any, code: str) -> str:
    res = session.run_privileged(
        in_version(board, f"/usr/bin/python3 -c {shlex.quote(code)}"), timeout=900
    )
    if res.rc != 0:
        raise SystemExit(f"python3 on the board: rc {res.rc}: {res.stderr.decode()[-1000:]}")
    return res.stdout.decode().strip().splitlines()[-1]


def board_figures(board_name: str, runs: int) -> dict[str, Any]:
    """Cold and warm `import torch` against a bare interpreter start; memory."""
    board = load(paths.lab_inventory()).resolve([board_name])[0]
    with Session(target_for(board.host)) as session:
        bare, cold, warm = [], [], []
        for _ in range(runs):
            bare.append(float(_python(session, board, TIMED.format(what="pass"))))
            session.run_privileged("sync; echo 3 > /proc/sys/vm/drop_caches", timeout=120)
            cold.append(float(_python(session, board, TIMED.format(what="import torch"))))
            warm.append(float(_python(session, board, TIMED.format(what="import torch"))))
        res = session.run_privileged(
            in_version(board, torch_command("emulate", MEMORY)), timeout=900
        )
        memory = json.loads(res.stdout.decode().strip().splitlines()[-1])
    base = statistics.median(bare) or 1e-9
    return {
        "board": board_name,
        "import_cold_s": statistics.median(cold),
        "import_warm_s": statistics.median(warm),
        "interpreter_baseline_s": base,
        "import_cold_ratio": round(statistics.median(cold) / base, 1),
        "import_warm_ratio": round(statistics.median(warm) / base, 1),
        "memory_mib": memory,
    }


def export_figures() -> dict[str, Any]:
    """Export the torch image, then the same image plus one small layer."""
    first = netroot_on_lab("export", TORCH_IMAGE, "--name", "raspbian")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {TORCH_IMAGE}\nCOPY stamp /etc/stamp\n")
        Path(tmp, "stamp").write_text(f"{time.time()}\n")
        ref = f"{TORCH_IMAGE.rpartition(':')[0]}:bench-layer"
        subprocess.run(["docker", "build", "--pull=false", "--platform", "linux/arm64", "-q",
                        "-t", ref, tmp], check=True, capture_output=True)  # fmt: skip
    second = netroot_on_lab("export", ref, "--name", "raspbian")
    size = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", TORCH_IMAGE],
                          check=True, capture_output=True, text=True).stdout  # fmt: skip
    return {"image_mb": int(size) // 10**6, "export_s": first, "one_layer_change_s": second,
            "one_layer_ratio": round(second / first, 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="pi-01")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--export", action="store_true")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.export:
        out["export"] = export_figures()
    out["board"] = board_figures(args.board, args.runs)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
