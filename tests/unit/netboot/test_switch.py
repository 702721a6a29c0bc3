"""The server side of a netboot switch: a JSON request in, the tree planned and applied under a
lock, `changed:` lines out; --check writes nothing. It runs on the NFS server as the one file the
server role ships (playbooks/roles/netroot_nfs_server/files/netroot-tftp, made by
netroot.bundle; tests/unit/remote/test_programs.py proves it is today's)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from netroot.errors import UsageError
from netroot.remote import switch

from .conftest import make_version

A, B = "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"
REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "playbooks/roles/netroot_nfs_server/files/netroot-tftp"


def request(tmp_path: Path, version: str, serial: str = "1a2b3c01") -> dict[str, Any]:
    return {
        "root": str(tmp_path / "tftp"),
        "boards": [{"board": "pi-01", "serial": serial, "version": version,
                    "cmdline": f"root=/dev/nfs nfsroot=s:/e/raspbian/versions/{version},vers=3",
                    "version_root": str(tmp_path / "versions" / version)}],
    }  # fmt: skip


@pytest.fixture
def versions(tmp_path: Path) -> Path:
    for version in (A, B):
        make_version(tmp_path / "versions", version)
    return tmp_path / "versions"


def test_check_reports_what_apply_then_does_and_writes_nothing(
    tmp_path: Path, versions: Path
) -> None:
    would = switch.switch(request(tmp_path, A), check=True)
    assert not (tmp_path / "tftp").exists()
    assert switch.switch(request(tmp_path, A), check=False) == would
    assert would == [f"copied {A}'s boot files", "bootcode.bin", f"pi-01 (1a2b3c01) -> {A}"]
    assert switch.switch(request(tmp_path, A), check=True) == []
    assert switch.switch(request(tmp_path, B), check=True) == [
        f"copied {B}'s boot files", "bootcode.bin", f"pi-01 (1a2b3c01) -> {B}"]  # fmt: skip
    assert os.readlink(tmp_path / "tftp" / "1a2b3c01").split("-")[1] == A  # still A


@pytest.mark.parametrize(
    "data,message",
    [
        ([], "expected {'root'"),
        ({"root": "tftp", "boards": []}, "root 'tftp' is not an absolute path"),
        ({"root": "/t", "boards": [{"board": "pi-01"}]}, "a board needs board, serial"),
    ],
)
def test_a_malformed_request_is_refused(data: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        switch.switch(data, check=True)


def test_main_prints_changes_and_refuses_in_one_line(
    tmp_path: Path,
    versions: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(request(tmp_path, A))))
    assert switch.main(["--apply"]) == 0
    assert f"changed: pi-01 (1a2b3c01) -> {A}" in capsys.readouterr().out.splitlines()
    bad = request(tmp_path, "cccccccccccccccc")
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(bad)))
    assert switch.main(["--apply"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("netroot-tftp: version cccccccccccccccc: no start.elf") and err.count(
        "\n") == 1  # fmt: skip


def test_switches_wait_for_each_other(tmp_path: Path) -> None:
    root = tmp_path / "tftp"
    order: list[str] = []

    def second() -> None:
        with switch.locked(root):
            order.append("second")

    with switch.locked(root):
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.2)
        order.append("first")
    waiter.join(5)
    assert order == ["first", "second"]


def test_the_shipped_tool_runs_with_nothing_but_itself(tmp_path: Path, versions: Path) -> None:
    # As the board play runs it on the server, plus -S: no site-packages, so no netroot
    # installed; from an empty directory.
    cwd = tmp_path / "empty"
    cwd.mkdir()
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    done = subprocess.run(
        [python, "-I", "-S", str(SHIPPED), "--apply"],
        input=json.dumps(request(tmp_path, A)), capture_output=True, text=True, check=False,
        cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"changed: pi-01 (1a2b3c01) -> {A}" in done.stdout
    assert os.readlink(tmp_path / "tftp" / "1a2b3c01").split("-")[1] == A
    assert list(cwd.iterdir()) == []
