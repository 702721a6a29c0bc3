"""The way back from a damaged version of a real Docker image: verify (exit 3) names the
command, the command puts the version back in place, verify passes (the real engine)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.integration.export import dockerkit
from tests.integration.export.test_export_docker import export_json, netroot
from tests.unit.export.test_export_repair import flip

pytestmark = pytest.mark.integration


def test_flipped_byte_verify_repair_verify(
    images: Path, docker_client: Any, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    out = export_json(tmp_path, dockerkit.FIDELITY, "--name", "fid")
    damaged = Path(out["path"]) / "opt/random.bin"
    inode = os.lstat(damaged).st_ino
    flip(damaged, 100)
    bad = netroot("verify", "fid", "--root", str(root), home=tmp_path)
    assert bad.returncode == 3, bad.stderr
    assert "changed /opt/random.bin (data)" in bad.stdout
    hint = bad.stderr.strip().splitlines()[-1]
    command = shlex.split(hint[hint.index("netroot export") :])
    assert command[2:] == [dockerkit.FIDELITY, "--name", "fid", "--repair", "--root", str(root)]
    fixed = netroot(*command[1:], home=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert "rewrote /opt/random.bin in place" in fixed.stdout
    good = netroot("verify", "fid", "--root", str(root), home=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr
    assert os.lstat(damaged).st_ino == inode  # an NFS client's handle to it stays good
