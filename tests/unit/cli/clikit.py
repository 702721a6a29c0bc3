"""`python -m netroot` as a user runs it from a script: stdout a pipe, no stdin, no COLUMNS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml


def netroot(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run netroot with NETROOT_HOME=home; stdout and stderr are pipes (not a terminal)."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NETROOT_INVENTORY")}
    done: subprocess.CompletedProcess[str] = subprocess.run(
        [sys.executable, "-m", "netroot", *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
        env={**base, "NO_COLOR": "1", "NETROOT_HOME": str(home), **env},
    )  # fmt: skip
    return done


def inventory(tmp_path: Path, root: Path, port: int = 1, name: str = "inventory.yml") -> Path:
    """An NFS server exporting `root` and two boards, on loopback addresses at `port` (1:
    refused)."""
    server = {"ansible_host": "127.0.0.2", "ansible_port": port, "netroot_export_root": str(root)}
    boards = {f"pi-0{i}": {"ansible_host": f"127.0.0.{2 + i}", "ansible_port": port}
              for i in (1, 2)}  # fmt: skip
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": server}},
                                 "boards": {"hosts": boards}}}}  # fmt: skip
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    root.mkdir(parents=True, exist_ok=True)
    return path


def error_lines(stderr: str) -> list[str]:
    """The lines of a refusal: `error: ...` and its `hint: ...`."""
    return [line for line in stderr.splitlines() if line.startswith(("error:", "hint:"))]
