"""Benchmark an export to a remote export root (not a test): ratios measured in one run.

    .venv/bin/python -m bench.bench_export_remote [--mib 200] [--files 2000] [--work DIR]

Needs root (a network namespace), sshd and rsync. The "server" is a real sshd in a network
namespace on this machine (tests/integration/provision_hosts.py), reached over SSH like any
remote NFS server; its export root is on this machine's disk, so the ratios measure netroot's
work and rsync's protocol over a veth, not a real network's bandwidth. Reports:

- remote cold export / local cold export of the same rootfs tar (--root on this host);
- remote cold export / bare rsync of the same tree to the server (the transfer's floor);
- a re-export after one small change (a few new files, as one image layer would add):
  bytes rsync sent over SSH against the version's size, its time against the cold one, and
  against the same re-export to the local root.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from tests.integration.export.rootfs_gen import write_bulk_rootfs
from tests.integration.provision_hosts import NetnsHost, available, netns_host, write_inventory


def _env(work: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
    return base | {"NETROOT_HOME": str(work / "home"), "NETROOT_CACHE": str(work / "cache")}


def _netroot(work: Path, *args: str) -> tuple[float, dict[str, Any]]:
    subprocess.run(["sync"], check=True)
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "netroot", "-q", *args, "--json"],
        capture_output=True,
        text=True,
        env=_env(work),
        check=False,
    )
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"netroot {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    result: dict[str, Any] = json.loads(p.stdout)
    return wall, result


def _changed(base: Path, out: Path, files: int, size: int) -> Path:
    shutil.copy(base, out)
    rng = random.Random(99)
    with tarfile.open(out, "a", format=tarfile.PAX_FORMAT) as tar:
        ti = tarfile.TarInfo("layer")
        ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 1_700_000_000
        tar.addfile(ti)
        for i in range(files):
            data = rng.randbytes(size)
            ti = tarfile.TarInfo(f"layer/f{i}")
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 1_700_000_000
            tar.addfile(ti, BytesIO(data))
    return out


def _bare_rsync(host: NetnsHost, src: Path, dest: Path) -> float:
    ssh = (
        f"ssh -i {host.key} -o UserKnownHostsFile={host.known_hosts} "
        "-o StrictHostKeyChecking=yes -o BatchMode=yes"
    )
    subprocess.run(["sync"], check=True)
    t = time.perf_counter()
    subprocess.run(
        ["rsync", "-aHAX", "--numeric-ids", "--sparse", "-e", ssh,
         f"{src}/", f"root@{host.address}:{dest}/"],
        check=True,
    )  # fmt: skip
    return time.perf_counter() - t


def prepared(doc: str, mib: int, files: int, prefix: str) -> tuple[argparse.Namespace, Path, Path]:
    """Parse --mib/--files/--work, check the machine can run it, write the rootfs tar:
    (args, work dir, tar)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--mib", type=int, default=mib)
    ap.add_argument("--files", type=int, default=files)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    why = available() or ("" if shutil.which("rsync") else "rsync is not installed")
    if why:
        raise SystemExit(f"cannot run: {why}")
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=args.work))
    tar = work / "v1.tar"
    write_bulk_rootfs(tar, args.mib << 20, args.files, seed=0)
    return args, work, tar


def main() -> None:
    _args, work, base = prepared(__doc__ or "", 200, 2000, "netroot-bench-remote-")
    try:
        changed = _changed(base, work / "v2.tar", files=8, size=128 << 10)
        (work / "host").mkdir()
        with netns_host(work / "host") as host:
            server_root = work / "server-root"
            inventory = write_inventory(
                work / "inventory.yml",
                {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": {
                    "ansible_host": host.address,
                    "netroot_export_remote": True,
                    "netroot_export_root": str(server_root),
                    "netroot_nfs_server_lib_dir": str(work / "server-lib"),
                    **host.inventory_vars(),
                }}}}}},
            )  # fmt: skip
            local_wall, local = _netroot(
                work, "export", str(base), "--name", "b", "--root", str(work / "local")
            )
            remote_wall, remote = _netroot(
                work, "-i", str(inventory), "export", str(base), "--name", "b"
            )
            tree = work / "local" / "b" / "versions" / local["version"]
            floor_wall = _bare_rsync(host, tree, work / "bare")
            again_wall, again = _netroot(
                work, "-i", str(inventory), "export", str(changed), "--name", "b"
            )
            local_again_wall, _ = _netroot(
                work, "export", str(changed), "--name", "b", "--root", str(work / "local")
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    size = again["bytes"]
    report = {
        "version_bytes": remote["bytes"],
        "entries": remote["files"],
        "local_export_s": round(local_wall, 2),
        "remote_export_s": round(remote_wall, 2),
        "bare_rsync_s": round(floor_wall, 2),
        "remote_vs_local": round(remote_wall / local_wall, 2),
        "remote_vs_bare_rsync": round(remote_wall / floor_wall, 2),
        "cold_bytes_sent": remote["bytes_sent"],
        "reexport_bytes_sent": again["bytes_sent"],
        "reexport_version_bytes": size,
        "reexport_sent_vs_version": round(again["bytes_sent"] / size, 4),
        "reexport_s": round(again_wall, 2),
        "reexport_vs_cold": round(again_wall / remote_wall, 2),
        "local_reexport_s": round(local_again_wall, 2),
        "reexport_remote_vs_local": round(again_wall / local_again_wall, 2),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
