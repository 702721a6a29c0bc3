"""Benchmark one export to two NFS servers (not a test): ratios measured in one run.

    .venv/bin/python -m bench.bench_export_servers [--mib 100] [--files 1000] [--work DIR]

Needs root (network namespaces), sshd and rsync. The two "servers" are real sshd hosts in
network namespaces on this machine (tests/integration/provision_hosts.py), each with its own
remote export root (netroot_export_remote) on this machine's disk: the ratios measure
netroot's work (one build, two sends at once) on a shared CPU and disk, not two real links.
Each export is cold (fresh server roots, fresh control-host cache). Reports:

- two servers at once (`netroot export` with both in the inventory) / one server;
- two servers at once / the same two exports one after the other (one inventory per server:
  what a lab without several-server support would do), which also builds the tree twice.
"""

from __future__ import annotations

import json
import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.bench_export_remote import _netroot, prepared
from tests.integration.provision_hosts import NetnsHost, netns_host, write_inventory


def _inventory(work: Path, name: str, hosts: dict[str, NetnsHost]) -> Path:
    servers: dict[str, Any] = {
        server: {
            "ansible_host": host.address,
            "netroot_export_remote": True,
            "netroot_export_root": str(work / name / f"root-{server}"),
            "netroot_nfs_server_lib_dir": str(work / "lib" / server),
            **host.inventory_vars(),
        }
        for server, host in hosts.items()
    }
    (work / name).mkdir()
    data = {"all": {"children": {"nfs_servers": {"hosts": servers}}}}
    return write_inventory(work / name / "inventory.yml", data)


def main() -> None:
    args, work, tar = prepared(__doc__ or "", 100, 1000, "netroot-bench-servers-")
    try:
        with ExitStack() as stack:
            hosts: dict[str, NetnsHost] = {}
            for server in ("nfs-01", "nfs-02"):
                (work / server).mkdir()
                hosts[server] = stack.enter_context(netns_host(work / server))
            walls: dict[str, float] = {}
            runs = {
                "one_server": {"nfs-01": hosts["nfs-01"]},
                "two_at_once": hosts,
                "seq_nfs-01": {"nfs-01": hosts["nfs-01"]},
                "seq_nfs-02": {"nfs-02": hosts["nfs-02"]},
            }
            sent: dict[str, Any] = {}
            for run, chosen in runs.items():
                inventory = _inventory(work, run, chosen)
                cache = work / run / "ctl"  # a fresh control-host cache: the build is counted
                cache.mkdir()
                walls[run], out = _netroot(cache, "-i", str(inventory), "export", str(tar),
                                           "--name", "b")  # fmt: skip
                sent[run] = out.get("servers") or {"nfs-01": {"bytes_sent": out["bytes_sent"]}}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sequential = walls["seq_nfs-01"] + walls["seq_nfs-02"]
    report = {
        "mib": args.mib,
        "one_server_s": round(walls["one_server"], 2),
        "two_at_once_s": round(walls["two_at_once"], 2),
        "two_one_after_other_s": round(sequential, 2),
        "two_at_once_vs_one": round(walls["two_at_once"] / walls["one_server"], 2),
        "two_at_once_vs_one_after_other": round(walls["two_at_once"] / sequential, 2),
        "bytes_sent_two_at_once": {s: r["bytes_sent"] for s, r in sent["two_at_once"].items()},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
