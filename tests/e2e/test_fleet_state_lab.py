"""One desired state for the fleet, on the virtual lab (issue 12's Show), in order:

a dry run leaves the export tree and every state byte-identical; a failing canary leaves
`current` and every board unchanged, also after `netroot provision boards`; of two rollouts
started seconds apart the second is refused (exit 6, naming the first) while the first runs
on and completes; a second copy of the inventory in another directory sees the first one's
assignments; the controller killed (kill -9) mid-rollout, the rollout resumed from the other
copy.

Boards are reached only through netroot and the LabHandle (no assumption about the login
user); the fleet state is read from the lab's export root.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netroot.fleet.state import load_state
from tests.e2e.conftest import LabHandle
from tests.e2e.helpers import BASE_IMAGE, NETROOT, netroot, variant_image

pytestmark = pytest.mark.e2e

FAST = ("--name", "raspbian", "--qpu", "skip", "--yes")


@pytest.fixture(scope="module")
def copies(lab: LabHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Path]]:
    """Two copies of the lab inventory in two directories; every board on the base image."""
    paths = []
    for where in ("ops", "ci"):
        path = tmp_path_factory.mktemp(where) / "inventory.yml"
        shutil.copy(lab.inventory, path)
        paths.append(path)
    proc = netroot(paths[0], "rollout", BASE_IMAGE, *FAST, "--canary", "0", "--batch", "100%")
    assert proc.returncode == 0, proc.stderr[-3000:]
    yield paths


def _current(lab: LabHandle) -> str:
    return Path(os.readlink(lab.export_root / "raspbian" / "current")).name


def _mounted(inv: Path) -> dict[str, str | None]:
    proc = netroot(inv, "status", "--json")
    return {b["board"]: b["mounted"] for b in json.loads(proc.stdout)["boards"]}


def _status(inv: Path) -> dict[str, dict[str, Any]]:
    proc = netroot(inv, "status", "--json")
    return {b["board"]: b for b in json.loads(proc.stdout)["boards"]}


def _tree(root: Path) -> dict[str, bytes | str]:
    """The export tree's bookkeeping, byte for byte: every file and link outside the version
    directories (state, lock, manifests, `current`, staging) and the list of versions."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here.name == "versions":
            out[str(here.relative_to(root))] = " ".join(sorted(dirnames))
            dirnames[:] = []  # the versions themselves are immutable trees
        for name in [*filenames, *[d for d in dirnames if (here / d).is_symlink()]]:
            p = here / name
            out[str(p.relative_to(root))] = (
                "-> " + os.readlink(p) if p.is_symlink() else p.read_bytes()
            )
    return out


def _rollout(inv: Path, image: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    proc = netroot(inv, "rollout", image, "--json", *FAST, *extra)
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _start(inv: Path, image: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NETROOT_INVENTORY": str(inv), "NO_COLOR": "1"}
    return subprocess.Popen(
        [*NETROOT, "rollout", image, *FAST, *extra], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _tree_of(pid: int) -> list[int]:
    """`pid` and all its descendants (Ansible's runner starts its own sessions)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError):
            continue
    found, todo = [pid], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        todo += kids
    return found


def test_dry_run_writes_nothing(lab: LabHandle, copies: list[Path]) -> None:
    image = variant_image("e2e-dry", "dry")
    before, mounted = _tree(lab.export_root), _mounted(copies[0])
    legacy = sorted(p.name for p in copies[0].parent.iterdir())
    proc = netroot(copies[0], "rollout", image, "--name", "raspbian", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    plan = json.loads(proc.stdout)["plan"]
    assert plan["to_version"] != _current(lab) and len(plan["batches"]) >= 1
    assert _tree(lab.export_root) == before
    assert sorted(p.name for p in copies[0].parent.iterdir()) == legacy
    assert _mounted(copies[0]) == mounted
    check = netroot(copies[0], "provision", "boards", "--check", "--json")
    assert check.returncode == 0, check.stderr[-2000:]
    assert _tree(lab.export_root) == before


def test_failing_canary_changes_nothing_even_after_provision(
    lab: LabHandle, copies: list[Path], tmp_path: Path
) -> None:
    current, mounted = _current(lab), _mounted(copies[0])
    image = variant_image("e2e-bad", "bad")
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_refuse_bad.py").write_text(
        "def test_refuses_image_bad(host):\n"
        "    stamp = host.file('/etc/netroot-stamp')\n"
        "    assert not (stamp.exists and stamp.content_string.strip() == 'bad')\n"
    )
    rc, result, _ = _rollout(copies[0], image, "--checks", str(checks))
    assert rc == 1 and result["stopped"] and not result["released"], result
    assert _current(lab) == current
    assert _mounted(copies[0]) == mounted
    proc = netroot(copies[0], "provision", "boards")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _mounted(copies[0]) == mounted
    assert _current(lab) == current


def test_second_rollout_refused_first_completes(lab: LabHandle, copies: list[Path]) -> None:
    image = variant_image("e2e-two", "two")
    first = _start(copies[0], image, "--canary", "0", "--batch", "100%")
    try:
        while not (lab.export_root / ".netroot-lock").exists():
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            time.sleep(0.2)
        started = time.monotonic()
        second = netroot(copies[1], "rollout", image, *FAST)
        took = time.monotonic() - started
        print(f"second rollout refused after {took:.1f} s")
        assert second.returncode == 6, second.stderr[-2000:]
        assert f"pid {first.pid}" in second.stderr and "netroot rollout" in second.stderr
        assert first.poll() is None  # refused while the first one was still at work
        assert first.wait(timeout=3600) == 0, first.stderr.read() if first.stderr else ""
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGINT)
            first.wait(timeout=600)
    version = _current(lab)
    assert set(_mounted(copies[0]).values()) == {version}


def test_other_copy_sees_assignments(lab: LabHandle, copies: list[Path]) -> None:
    status = _status(copies[1])
    version = _current(lab)
    for board in lab.boards[:3]:
        assert status[board]["should_run"] == version
        assert status[board]["should_run_by"] == "assigned"
        assert not status[board]["drift"]


def test_controller_killed_then_resumed_from_the_other_copy(
    lab: LabHandle, copies: list[Path]
) -> None:
    image = variant_image("e2e-kill", "kill")
    first = _start(copies[0], image, "--canary", "1", "--batch", "100%")
    deadline = time.monotonic() + 3600
    target = None
    while time.monotonic() < deadline and first.poll() is None:
        state = load_state(lab.export_root)
        if state.rollout is not None and state.rollout.outcome == "running":
            target = state.rollout.to_version
            pi01 = state.boards.get("pi-01")
            if pi01 is not None and pi01.last_good == target:
                break  # the canary is green: the controller dies during the next batch
        time.sleep(0.5)
    assert first.poll() is None, first.stderr.read() if first.stderr else ""
    for pid in _tree_of(first.pid):  # the whole controller: netroot, Ansible, pytest, ssh
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    first.wait()
    assert (lab.export_root / ".netroot-lock").exists()  # left behind by the dead holder
    rc, result, stderr = _rollout(copies[1], image, "--canary", "1", "--batch", "100%")
    assert rc == 0, stderr[-3000:]
    assert "pi-01" in result["plan"]["unchanged"]
    assert result["released"] and _current(lab) == target
    assert set(_mounted(copies[1]).values()) == {target}
    assert not (lab.export_root / ".netroot-lock").exists()
