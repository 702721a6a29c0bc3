"""What PyTorch costs: exporting the torch image, and a board importing it (not a test).

    .venv/bin/python -m bench.bench_torch --export                   # no lab needed
    .venv/bin/python -m bench.bench_torch --board pi-01 [--deploy]   # a running arm64 lab

--export exports netroot-lab/raspbian-torch:bookworm (Debian's python3-torch, arm64) into a
scratch export root, against `docker export | tar -xp` of the same image in the same run (the
baseline), then the image plus one small layer (the re-export, against the cold export).

--board needs `netroot lab up --arch arm64`; --deploy first rolls the torch image out to the
board (`netroot rollout`, --qpu skip). Measured on the board, inside its chroot, each as a whole
`python3 -c` process timed by a parent python: `import torch` from the NFS root cold (the
board's page cache dropped first) and warm, against `import numpy` from the same root cold and
warm and a bare interpreter (the baselines: ratios carry over to a real 3B, seconds under QEMU
TCG do not); the board's memory (MemTotal, MemAvailable) before and after `import torch` and
after one netroot operator (EMULATED: the lab has no VideoCore IV), and each process's peak RSS
against a bare interpreter's. Prints JSON.

Measured 2026-12-05 (shared 2-core x86-64 host; README, "What torch costs", has the prose):
- --export, three runs: image 1147 MB, 23 596 entries; cold export / tar pipe 1.20, 1.97, 0.82
  wall (2.04, 1.74, 1.72 CPU); one-layer re-export / cold export 0.26, 0.27, 0.34 wall (read
  via layer-dirs, 19 595 files reused); no-op export 1.08, 0.48 s; disk two versions / one 1.04.
- --board pi-01 --deploy --runs 2 (arm64 lab, -m 896, MemTotal 851 MiB): rollout 113 s;
  import torch 35.3 s cold, 28.8 s warm (medians) = 11.6x / 13.0x import numpy cold / warm,
  113x a bare interpreter, cold 1.23x warm; peak RSS torch 230 MiB = 8.2x numpy, 26x bare;
  MemAvailable 627 MiB before and after import and after one operator (correct, EMULATED).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_export import disk_kib, netroot_export, reference, timed
from bench.labcmd import netroot_on_lab
from netroot import paths
from netroot.adapters.ssh import Session
from netroot.inventory import load
from netroot.qpu.bundle import torch_command
from netroot.smoke.backend import in_version
from netroot.sshtarget import target_for

TORCH_IMAGE = "netroot-lab/raspbian-torch:bookworm"
LAYER_IMAGE = "netroot-bench/raspbian-torch:one-layer"
# A parent python times the whole child process (start, import, exit) and reads its peak RSS.
TIMED = """
import resource, subprocess, time
t = time.monotonic()
subprocess.run(["/usr/bin/python3", "-c", {what!r}], check=True)
print(time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""
MEMORY = """
import json, resource
def meminfo():
    fields = dict(line.split(':', 1) for line in open('/proc/meminfo'))
    return {k: int(fields[k].split()[0]) // 1024 for k in ('MemTotal', 'MemAvailable')}
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
before = meminfo()
import torch
after_import, rss_import = meminfo(), peak()
q = torch.ops.netroot.matvec(torch.ones(16, 100), torch.ones(100))
ok = bool(torch.equal(q, torch.full((16,), 100.0)))
print(json.dumps({"before": before, "after_import": after_import,
                  "after_operator": meminfo(), "peak_rss_mib_after_import": rss_import,
                  "peak_rss_mib_after_operator": peak(), "operator_correct": ok,
                  "operator_emulated": EMULATED}))
"""


def _python(session: Session, board: Any, code: str) -> list[str]:
    res = session.run_privileged(
        in_version(board, f"/usr/bin/python3 -c {shlex.quote(code)}"), timeout=600
    )
    if res.rc != 0:
        raise SystemExit(f"python3 on the board: rc {res.rc}: {res.stderr.decode()[-1000:]}")
    return res.stdout.decode().strip().splitlines()[-1].split()


def board_figures(board_name: str, runs: int) -> dict[str, Any]:
    """Cold and warm `import torch` against `import numpy` and a bare interpreter; memory."""
    board = load(paths.lab_inventory()).resolve([board_name])[0]
    seconds: dict[str, list[float]] = {}
    rss: dict[str, int] = {}

    def measure(key: str, code: str, cold: bool) -> None:
        if cold:
            session.run_privileged("sync; echo 3 > /proc/sys/vm/drop_caches", timeout=120)
        took, peak = _python(session, board, TIMED.format(what=code))
        seconds.setdefault(key, []).append(float(took))
        rss[key.split("_")[0]] = int(peak)

    with Session(target_for(board.host)) as session:
        for _ in range(runs):
            measure("bare_warm", "pass", False)
            measure("numpy_cold", "import numpy", True)
            measure("numpy_warm", "import numpy", False)
            measure("torch_cold", "import torch", True)
            measure("torch_warm", "import torch", False)
        res = session.run_privileged(
            in_version(board, torch_command("emulate", MEMORY)), timeout=600
        )
        if res.rc != 0:
            raise SystemExit(f"memory probe: rc {res.rc}: {res.stderr.decode()[-1000:]}")
        memory = json.loads(res.stdout.decode().strip().splitlines()[-1])
    median = {k: statistics.median(v) for k, v in seconds.items()}
    return {
        "board": board_name,
        "runs": runs,
        "seconds": {k: [round(x, 2) for x in v] for k, v in seconds.items()},
        "torch_cold_vs_numpy_cold": round(median["torch_cold"] / median["numpy_cold"], 1),
        "torch_warm_vs_numpy_warm": round(median["torch_warm"] / median["numpy_warm"], 1),
        "torch_warm_vs_bare": round(median["torch_warm"] / median["bare_warm"], 1),
        "torch_cold_vs_warm": round(median["torch_cold"] / median["torch_warm"], 2),
        "peak_rss_mib": rss,
        "torch_rss_vs_bare": round(rss["torch"] / max(rss["bare"], 1), 1),
        "torch_rss_vs_numpy": round(rss["torch"] / max(rss["numpy"], 1), 1),
        "memory_mib": memory,
        "left_of_memtotal_after_operator": round(
            memory["after_operator"]["MemAvailable"] / memory["after_operator"]["MemTotal"], 2
        ),
    }


def export_figures(work: Path) -> dict[str, Any]:
    """Export the torch image cold (against the tar pipe), then the same plus one layer."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {TORCH_IMAGE}\nCOPY stamp /etc/stamp\n")
        Path(tmp, "stamp").write_text(f"{time.time()}\n")
        subprocess.run(["docker", "build", "--pull=false", "--platform", "linux/arm64", "-q",
                        "-t", LAYER_IMAGE, tmp], check=True, capture_output=True)  # fmt: skip
    root = work / "root"
    tar_wall, tar_cpu = timed(lambda: reference(TORCH_IMAGE, work / "ref"))
    cold_wall, cold_cpu = timed(lambda: netroot_export(TORCH_IMAGE, root))
    # The same image again: a no-op, the fixed cost of one `netroot export` process.
    noop_wall, _ = timed(lambda: netroot_export(TORCH_IMAGE, root))
    first = netroot_export(TORCH_IMAGE, root)  # its manifest
    layer: dict[str, Any] = {}
    layer_wall, layer_cpu = timed(lambda: layer.update(netroot_export(LAYER_IMAGE, root)))
    size = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", TORCH_IMAGE],
                          check=True, capture_output=True, text=True).stdout  # fmt: skip
    versions = root / "bench" / "versions"
    one = disk_kib(versions / str(first["version"]))
    two = disk_kib(versions)
    return {
        "image_mb": int(size) // 10**6,
        "tar_pipe_s": round(tar_wall, 2),
        "export_s": round(cold_wall, 2),
        "export_vs_tar_wall": round(cold_wall / tar_wall, 2),
        "export_vs_tar_cpu": round(cold_cpu / tar_cpu, 2),
        "one_layer_change_s": round(layer_wall, 2),
        "one_layer_vs_export_wall": round(layer_wall / cold_wall, 3),
        "one_layer_vs_export_cpu": round(layer_cpu / cold_cpu, 3),
        "noop_export_s": round(noop_wall, 2),
        "one_layer_vs_export_less_fixed": round(
            (layer_wall - noop_wall) / (cold_wall - noop_wall), 3
        ),
        "disk_two_versions_vs_one": round(two / one, 4),
        "one_layer_read_via": layer.get("source", {}).get("via"),
        "one_layer_reused_files": layer.get("reused_files"),
        "manifest_of_first": {k: first.get(k) for k in ("files", "bytes") if k in first},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default=None, help="a board of a running arm64 lab")
    parser.add_argument("--deploy", action="store_true", help="roll the torch image out first")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--export", action="store_true")
    parser.add_argument("--work", type=Path, default=Path("/var/tmp"))
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.export:
        work = Path(tempfile.mkdtemp(prefix="netroot-bench-torch-", dir=args.work))
        try:
            out["export"] = export_figures(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if args.board and args.deploy:
        out["rollout_s"] = round(
            netroot_on_lab("rollout", TORCH_IMAGE, "--name", "raspbian", "--group", args.board,
                           "--canary", "0", "--batch", "100%", "--qpu", "skip", "--yes"), 1
        )  # fmt: skip
    if args.board:
        out["board"] = board_figures(args.board, args.runs)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
