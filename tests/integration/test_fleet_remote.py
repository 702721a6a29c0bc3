"""Two control hosts against one remote export root: one writer, one fleet, over real SSH.

A real sshd in a network namespace is the NFS server (netroot_export_remote: true). Each
control host has its own copy of the inventory and its own NETROOT_HOME; everything they do
goes through SSH to the server's helpers (the namespace shares this machine's filesystem, so
the test reads the server's export root directly, only to check). The boards are addresses
where nothing listens: provision and rollout against real boards are the lab's e2e; here the
lock and the state go through the real helper, and the commands that refuse, plan, read and
prune run end to end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from netroot.remote.fleet import STATE_NAME
from netroot.remote.lock import LOCK_NAME
from tests.integration.export.rootfs_gen import write_fidelity_rootfs
from tests.integration.export.test_export_remote import _changed
from tests.integration.provision_hosts import NEEDS_HOSTS, NetnsHost, netns_host, write_inventory

pytestmark = [
    *NEEDS_HOSTS,
    pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed"),
]

# A control host's writer that holds the lock until told to go: it records an assignment
# under the lock (saved when it leaves the block), as a rollout records its boards.
HOLD = """
import sys
from pathlib import Path
from netroot.fleet.where import open_fleet
from netroot.inventory import load
fleet = open_fleet(load(Path(sys.argv[1])))
with fleet.writing("netroot rollout img") as state:
    state.board("pi-01").assigned = sys.argv[2]
    print("held", flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("srv")) as h:
        yield h


@dataclass
class Control:
    """One control host: its inventory copy and its NETROOT_HOME."""

    name: str
    work: Path
    inventory: Path

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
        return base | {
            "NETROOT_HOME": str(self.work / "home"),
            "NETROOT_CACHE": str(self.work / "cache"),
            "NO_COLOR": "1",
        }

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "netroot", "-i", str(self.inventory), *args]
        return subprocess.run(argv, capture_output=True, text=True, env=self.env(), timeout=300)

    def json(self, *args: str) -> Any:
        done = self.run(*args, "--json")
        # 4: the lab's boards are not there (status still prints its data).
        assert done.returncode in (0, 1, 4), done.stderr
        return json.loads(done.stdout)

    def hold(self, assign: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(self.inventory), assign],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(),
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "held\n", proc.stderr.read() if proc.stderr else line
        return proc


@dataclass
class Lab:
    a: Control
    b: Control
    root: Path  # the server's export root (read here only to check)
    lib: Path


@pytest.fixture
def lab(host: NetnsHost, tmp_path: Path) -> Lab:
    root, lib = tmp_path / "server-root", tmp_path / "server-lib"
    server = {
        "ansible_host": host.address,
        "netroot_export_remote": True,
        "netroot_export_root": str(root),
        "netroot_nfs_server_lib_dir": str(lib),
        **host.inventory_vars(),
    }
    board = {"ansible_host": host.spare, "netroot_image": "img", "netroot_serial": "0000abcd"}
    data = {
        "all": {
            "children": {
                "nfs_servers": {"hosts": {"nfs-01": server}},
                "boards": {"hosts": {"pi-01": board | host.inventory_vars()}},
            }
        }
    }
    controls = []
    for name in ("ctl-a", "ctl-b"):
        work = tmp_path / name
        work.mkdir()
        controls.append(Control(name, work, write_inventory(work / "inventory.yml", data)))
    return Lab(controls[0], controls[1], root, lib)


@pytest.fixture(scope="module")
def tars(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("tars")
    base = out / "v1.tar"
    write_fidelity_rootfs(base)
    v2 = _changed(base, out / "v2.tar", "etc/v2", b"two\n")
    return [base, v2, _changed(v2, out / "v3.tar", "etc/v3", b"three\n")]


def _export(control: Control, tar: Path) -> str:
    done = control.run("export", str(tar), "--name", "img", "--json")
    assert done.returncode == 0, done.stderr
    version: str = json.loads(done.stdout)["version"]
    return version


def _should_run(control: Control) -> tuple[str, str]:
    row = control.json("status", "pi-01")["boards"][0]
    return row["should_run"], row["should_run_by"]


def _snapshot(*dirs: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under `dirs` with its mode, size and mtime: what a write would change."""
    found: dict[str, tuple[int, int, int]] = {}
    for top in dirs:
        for path in [top, *top.rglob("*")]:
            st = path.lstat()
            found[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


def test_one_writer_and_one_fleet_for_two_control_hosts(lab: Lab, tars: list[Path]) -> None:
    vid = _export(lab.a, tars[0])
    assert _should_run(lab.b) == (vid, "current")  # B reads `current` from the server
    holder = lab.a.hold("v-assigned-by-a")
    try:
        # B is refused at once, naming A's command, A's host and pid, and the server.
        done = lab.b.run("rollback", "pi-01", "--to", vid, "--yes")
        assert done.returncode == 6, done.stderr
        assert f"netroot rollout img (from {os.uname().nodename} pid {holder.pid})" in done.stderr
        assert "Traceback" not in done.stderr
        assert (lab.root / LOCK_NAME).is_file()  # the lock is the server's
        # Readers never wait for the lock; A's assignment is not saved until A is done.
        assert _should_run(lab.b) == (vid, "current")
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "released\n"
        assert holder.wait(timeout=60) == 0
    assert not (lab.root / LOCK_NAME).exists()
    # What A recorded, B sees: one fleet, kept on the server, written there durably.
    assert _should_run(lab.b) == ("v-assigned-by-a", "assigned")
    state = lab.root / STATE_NAME
    assert state.stat().st_mode & 0o777 == 0o600
    assert json.loads(state.read_text())["boards"]["pi-01"]["assigned"] == "v-assigned-by-a"
    for control in (lab.a, lab.b):  # no control host keeps a state of its own
        assert not [p for p in control.work.rglob("*") if "state" in p.name or p.name == STATE_NAME]
    # And B now takes the lock A left.
    lab.b.hold("v-by-b").kill()


def test_a_killed_control_host_frees_the_lock(lab: Lab, tars: list[Path]) -> None:
    _export(lab.a, tars[0])
    holder = lab.a.hold("v-a")
    holder.kill()  # kill -9: its ssh dies with it (PR_SET_PDEATHSIG), the session ends
    holder.wait()
    deadline = time.monotonic() + 60
    while True:
        done = lab.b.run("rollback", "pi-01", "--to", "0123456789ab", "--yes")
        if done.returncode != 6 or time.monotonic() > deadline:
            break
        time.sleep(1)
    # Past the lock: refused for the version instead (exit 2), nothing recorded by A.
    assert done.returncode == 2 and "has no version 0123456789ab" in done.stderr, done.stderr
    assert not (lab.root / STATE_NAME).exists()


def test_versions_and_prune_on_the_remote_root_keep_what_boards_need(
    lab: Lab, tars: list[Path]
) -> None:
    v1, v2, v3 = (_export(lab.a, tar) for tar in tars)
    listed = lab.b.json("versions", "img")
    assert listed["current"] == v3
    assert [v["version"] for v in listed["versions"]] == [v1, v2, v3]
    lab.a.hold(v1).communicate("go\n", timeout=60)  # pi-01 assigned the oldest
    pruned = lab.b.json("prune", "img", "--keep", "1")
    assert pruned["removed"] == [v2]  # v1 is assigned, v3 is current and newest
    assert sorted(os.listdir(lab.root / "img" / "versions")) == sorted(
        [v1, f"{v1}.json", v3, f"{v3}.json"]
    )
    # export --keep prunes there too, with the same protection: v2 committed again is the
    # newest, v1 is assigned (and current again), v3 goes.
    assert _export(lab.b, tars[1]) == v2
    done = lab.b.run("export", str(tars[0]), "--name", "img", "--keep", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pruned"] == [v3]
    assert lab.b.json("versions", "img")["current"] == v1


def test_plans_and_reads_write_nothing_on_the_server(lab: Lab, tars: list[Path]) -> None:
    _export(lab.a, tars[0])
    lab.a.hold("v-a").communicate("go\n", timeout=60)
    before = _snapshot(lab.root)
    plan = lab.b.run("rollout", str(tars[1]), "--name", "img", "--dry-run", "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["dry_run"]
    for args in (["status"], ["versions", "img"], ["verify", "img"]):
        assert lab.b.run(*args).returncode in (0, 1, 4)  # 4: no board is there to read
    assert _snapshot(lab.root) == before
    assert not lab.lib.exists()  # the helpers are sent in the command line: nothing installed
