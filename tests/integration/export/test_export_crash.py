"""kill -9 in the middle of an export, and a disk that fills up: `current` never moves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netroot.run import run
from tests.integration.export import dockerkit

pytestmark = pytest.mark.integration

BULK = "netroot-test/export-bulk:1"


@pytest.fixture(scope="module")
def bulk_image(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    dockerkit.build_bulk(tmp_path_factory.mktemp("bulk"), BULK, 160 << 20, b"v1\n")
    return BULK


def env(home: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
    return base | {"NETROOT_HOME": str(home), "NO_COLOR": "1"}


def export(image: str, root: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "netroot",
            "export",
            image,
            "--name",
            "crash",
            "--root",
            str(root),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env(home),
        check=False,
        timeout=900,
    )


def staged_files(root: Path) -> int:
    staging = root / "crash" / ".staging"
    return sum(len(files) for _, _, files in os.walk(staging)) if staging.is_dir() else 0


def state(root: Path) -> tuple[str, list[str]]:
    versions = root / "crash" / "versions"
    return os.readlink(root / "crash" / "current"), sorted(os.listdir(versions))


@pytest.mark.parametrize("after_files", [20, 3000, 7000])
def test_kill9_mid_export_keeps_current(
    images: Path, bulk_image: str, docker_client: Any, tmp_path: Path, after_files: int
) -> None:
    root = tmp_path / "root"
    first = export(dockerkit.FIDELITY, root, tmp_path)
    assert first.returncode == 0, first.stderr
    vid = json.loads(first.stdout)["version"]
    before = state(root)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "netroot",
            "export",
            bulk_image,
            "--name",
            "crash",
            "--root",
            str(root),
        ],
        env=env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while proc.poll() is None and staged_files(root) < after_files:
            time.sleep(0.02)
        killed = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    if killed:
        assert state(root) == before == (f"versions/{vid}", [vid, f"{vid}.json"])
    # The next run cleans the stale staging dir and the killed run's container, and completes.
    again = export(bulk_image, root, tmp_path)
    leftover = docker_client.containers.list(
        all=True, filters={"label": ["netroot=export", f"netroot.pid={proc.pid}"]}
    )
    assert leftover == []
    assert again.returncode == 0, again.stderr
    new = json.loads(again.stdout)["version"]
    assert state(root)[0] == f"versions/{new}"
    assert os.listdir(root / "crash" / ".staging") == []
    verify = subprocess.run(
        [sys.executable, "-m", "netroot", "verify", "crash", "--root", str(root)],
        env=env(tmp_path),
        check=False,
    )
    assert verify.returncode == 0
    assert killed, f"the export finished before {after_files} files were staged"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "small"
    mnt.mkdir()
    try:
        run(["mount", "-t", "tmpfs", "-o", "size=24m", "netroot-enospc", str(mnt)])
    except Exception as exc:
        pytest.skip(f"cannot mount a small tmpfs here: {exc}")
    try:
        yield mnt
    finally:
        run(["umount", "-l", str(mnt)], check=False)


def test_enospc_keeps_current_and_cleans_staging(
    images: Path, bulk_image: str, small_fs: Path, tmp_path: Path
) -> None:
    first = export(dockerkit.FIDELITY, small_fs, tmp_path)
    assert first.returncode == 0, first.stderr
    vid = json.loads(first.stdout)["version"]
    full = export(bulk_image, small_fs, tmp_path)
    assert full.returncode == 5, full.stderr
    lines = full.stderr.strip().splitlines()
    assert lines[0].startswith("error: no space left on the export root")
    assert lines[1].startswith("hint:") and len(lines) == 2
    assert state(small_fs) == (f"versions/{vid}", [vid, f"{vid}.json"])
    assert os.listdir(small_fs / "crash" / ".staging") == []
