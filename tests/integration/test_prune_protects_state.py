"""`netroot prune` never removes a version a board is pinned to, assigned, or last ran green."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from netroot.fleet.state import load_state


def test_prune_spares_state_versions(tmp_path: Path) -> None:
    root = tmp_path / "export"
    inv = tmp_path / "inventory.yml"
    inv.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "nfs_servers": {"hosts": {"nfs": {"ansible_host": "10.0.0.2",
                                                          "netroot_export_root": str(root)}}},
                        "boards": {"hosts": {"pi-01": {"ansible_host": "10.0.0.11",
                                                       "netroot_image": "img"}}},
                    }
                }
            }
        )
    )  # fmt: skip
    env = {**os.environ, "NETROOT_INVENTORY": str(inv), "NO_COLOR": "1"}
    tar = tmp_path / "rootfs.tar"
    made = []
    for i in range(3):
        (tmp_path / "src" / "etc").mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / "etc" / "n").write_text(str(i))
        subprocess.run(["tar", "-C", str(tmp_path / "src"), "-cf", str(tar), "."], check=True)
        out = subprocess.run(
            [sys.executable, "-m", "netroot", "export", str(tar), "--name", "img", "--json"],
            capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
        made.append(json.loads(out.stdout)["version"])
    state = load_state(root)
    state.board("pi-01").assigned = made[0]
    state.board("pi-01").record_good(made[1])
    state.save()
    subprocess.run(
        [sys.executable, "-m", "netroot", "prune", "img", "--keep", "1"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    left = {p.name for p in (root / "img" / "versions").iterdir() if p.is_dir()}
    assert left == set(made)  # made[2] is current, the others are the board's
    state.boards["pi-01"].assigned = made[2]
    state.boards["pi-01"].last_good = made[2]
    state.save()
    subprocess.run(
        [sys.executable, "-m", "netroot", "prune", "img", "--keep", "1"],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    left = {p.name for p in (root / "img" / "versions").iterdir() if p.is_dir()}
    assert left == {made[2]}
