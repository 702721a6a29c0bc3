"""Issue 23 on the virtual lab: `lab up --servers 2` splits the boards between nfs-01 and nfs-02
(NFS-Ganesha in a container each, the suite's running lab grown by one server).

One rollout does the work (each costs minutes of emulated boards): nfs-02 is stopped while the
canary (pi-01, on nfs-01) is being smoked; the next batch's board on nfs-02 (pi-02) fails as
unreachable within the budget and nfs-01's other board (pi-03) completes. With nfs-02 back,
the same command again finishes the job; then every board mounts its version from its own
server, as the board itself says (the source address of its NFS mount).

The module gives back the lab it found: one server again (pi-02 lets go of nfs-02 first).
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import LabHandle, _report, current_lab
from tests.e2e.helpers import netroot, netroot_while, variant_image

pytestmark = pytest.mark.e2e

BOARDS = ("pi-01", "pi-02", "pi-03")  # nfs-01, nfs-02, nfs-01: dealt out in turn
SERVER_OF = {"pi-01": "nfs-01", "pi-02": "nfs-02", "pi-03": "nfs-01"}
GROUP = "e2e_servers"
FAST = ("--qpu", "skip", "--yes", "--canary", "1", "--batch", "100%", "--group", GROUP)


@dataclass(frozen=True)
class ServersLab:
    lab: LabHandle
    inventory: Path  # this module's copy: a group of the three boards, quick mount retries
    size: int  # boards in the lab (kept: a lab grown by another module stays so)


def _inventory_copy(lab: LabHandle, dest: Path) -> Path:
    """The lab's inventory with a group of BOARDS, and a board that cannot reach its server
    giving up after 2 tries of 10 s (default 10 of 20 s: minutes of a batch spent waiting)."""
    data = yaml.safe_load(lab.inventory.read_text())
    boards = data["all"]["children"]["boards"]
    boards.setdefault("vars", {}).update(
        netroot_board_mount_retries=2, netroot_board_mount_attempt_timeout=10
    )
    boards.setdefault("children", {})[GROUP] = {"hosts": {b: {} for b in BOARDS}}
    dest.write_text(yaml.safe_dump(data, sort_keys=False))
    return dest


@pytest.fixture(scope="module")
def servers_lab(lab: LabHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServersLab]:
    from netroot.lab.host import service

    size = max(len(BOARDS), len(lab.boards))
    # Other modules reconfigure nfs-01's ganesha too: take turns (as test_stock_lab does).
    with (lab.lab_dir / ".ganesha.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        t0 = time.monotonic()
        service.up(size, _report, servers=2)
        _report(f"two servers up after {time.monotonic() - t0:.1f} s")
        handle = current_lab(lab.started_here)
        copy = _inventory_copy(handle, tmp_path_factory.mktemp("servers") / "inventory.yml")
        try:
            yield ServersLab(handle, copy, size)
        finally:
            service.up(size, _report)  # one server again: pi-02 lets go of nfs-02 first


def _mount_sources(lab: LabHandle, board: str) -> set[str]:
    """The sources (server:path) of the board's NFS mounts, from the board: its version's
    export, and binds of files in it (the version's manifest)."""
    return set(lab.ssh(board, "awk '$3 ~ /^nfs/ {print $1}' /proc/mounts").stdout.split())


def test_lab_up_servers_2_gives_each_board_its_own_server(servers_lab: ServersLab) -> None:
    from netroot.inventory import load
    from netroot.lab.host import service

    lab = servers_lab.lab
    status = service.status()
    servers = {h.name: h for h in status.hosts if h.role == "server"}
    assert set(servers) == {"nfs-01", "nfs-02"}
    assert all(h.running and h.ssh for h in servers.values()) and status.up
    assert service.healthy(status)
    inv = load(lab.inventory)
    assert {n: s.address for n, s in inv.servers.items()} == {
        "nfs-01": "10.77.0.2",
        "nfs-02": "10.77.0.3",
    }
    assert {b: inv.server_of(b).name for b in BOARDS} == SERVER_OF
    assert inv.server.name == "nfs-01"  # the fleet's one home
    # Two machines: each its own name, its own export root.
    assert lab.ssh("nfs-02", "hostname").stdout.strip() == "nfs-02"
    assert inv.servers["nfs-02"].export_root != inv.servers["nfs-01"].export_root


def _rollout(inv: Path, image: str) -> tuple[int, dict[str, Any], float]:
    t0 = time.monotonic()
    proc = netroot(inv, "rollout", image, "--name", "raspbian", "--json", "--max-fail", "1",
                   *FAST)  # fmt: skip
    took = time.monotonic() - t0
    assert proc.stdout, proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), took


def _outcomes(result: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {b["board"]: (b["outcome"], b.get("message") or "") for b in result["boards"]}


def test_a_server_stopped_mid_rollout_fails_only_its_boards_and_a_rerun_finishes(
    servers_lab: ServersLab,
) -> None:
    from netroot.fleet.state import load_state
    from netroot.inventory import load
    from netroot.lab.host import service

    lab, inv = servers_lab.lab, servers_lab.inventory
    image = variant_image("e2e-servers", f"servers {time.time()}")
    stopped: list[float] = []
    t0 = time.monotonic()

    def stop_nfs02_while_the_canary_is_smoked(running: Callable[[], bool]) -> None:
        # The canary (pi-01, nfs-01's) is switched and being smoked: its version is mounted.
        # nfs-02 goes down before the next batch (pi-02 on nfs-02, pi-03 on nfs-01) starts.
        while running():
            state = load_state(lab.export_root)
            rollout = state.rollout
            if rollout and rollout.image == image and rollout.finished is None:
                canary = state.board("pi-01")
                if canary.phase == "smoking" and canary.mounted == rollout.to_version:
                    subprocess.run(["docker", "rm", "-f", "netroot-lab-nfs-02"], check=True,
                                   capture_output=True)  # fmt: skip
                    stopped.append(round(time.monotonic() - t0, 1))
                    return
            time.sleep(0.5)

    args = ["rollout", image, "--name", "raspbian", "--json", "--max-fail", "1", *FAST]
    proc = netroot_while(inv, args, stop_nfs02_while_the_canary_is_smoked)
    took = time.monotonic() - t0
    _report(f"rollout, nfs-02 stopped at {stopped} s: rc {proc.returncode} in {took:.0f} s")
    assert stopped, "nfs-02 was not stopped while the canary was smoked"
    # Exit 4: a board unreachable, within the budget; the rest completed.
    assert proc.returncode == 4, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    outcomes = _outcomes(result)
    assert outcomes["pi-01"][0] == "ok" and outcomes["pi-03"][0] == "ok", outcomes
    assert outcomes["pi-02"][0] == "unreachable" and "nfs-02" in outcomes["pi-02"][1], outcomes
    version = str(result["plan"]["to_version"])

    # nfs-02 back (a new machine: nothing exported until provisioned), then the same command:
    # pi-02 only (the others are on the version already).
    service.up(servers_lab.size, _report, servers=2)
    rc, again, took_again = _rollout(inv, image)
    _report(f"rerun with nfs-02 back: rc {rc} in {took_again:.0f} s")
    assert rc == 0, again
    assert {b: o for b, (o, _) in _outcomes(again).items()} == {"pi-02": "ok"}
    assert again["plan"]["to_version"] == version

    # Each board mounts its version from its own server, as the board says.
    servers = load(inv).servers
    for board in BOARDS:
        server = servers[SERVER_OF[board]]
        share = f"{server.address}:{server.export_root}/raspbian"
        sources = _mount_sources(lab, board)
        assert share in sources, (board, sources)
        assert all(s == share or s.startswith(f"{share}/") for s in sources), (board, sources)
    status = json.loads(netroot(inv, "status", GROUP, "--json").stdout)["boards"]
    assert {b["board"]: (b["mounted"], bool(b["drift"])) for b in status} == {
        b: (version, False) for b in BOARDS
    }


def _moved(inv: Path, board: str, server: str, dest: Path) -> Path:
    """The module's inventory with `board` served by `server` (an inventory change)."""
    data = yaml.safe_load(inv.read_text())

    def walk(group: dict[str, Any]) -> None:
        for name, hostvars in (group.get("hosts") or {}).items():
            if name == board and hostvars is not None:  # the first server's boards name none
                hostvars["netroot_nfs_server"] = server
        for child in (group.get("children") or {}).values():
            walk(child or {})

    walk(data["all"])
    dest.write_text(yaml.safe_dump(data, sort_keys=False))
    return dest


def test_a_board_moved_between_live_servers_remounts_without_unmounting_first(
    servers_lab: ServersLab, tmp_path: Path
) -> None:
    """pi-03, mounted from nfs-01, moved to nfs-02 by an inventory change while both serve, and
    back: each provision remounts it from its new server (the old one drops it from its exports,
    and its mounts of the old one answer ESTALE: netroot-mount finds them in the mount table)."""
    from netroot.inventory import load

    lab = servers_lab.lab
    # Mounted from nfs-01 first (a no-op after the rollout above, whose version both servers
    # hold: this test runs after it).
    first = netroot(servers_lab.inventory, "provision", "nfs_servers", "pi-03")
    assert first.returncode == 0, first.stderr[-3000:]
    before = _mount_sources(lab, "pi-03")
    for server in ("nfs-02", "nfs-01"):
        inv = _moved(servers_lab.inventory, "pi-03", server, tmp_path / f"{server}.yml")
        proc = netroot(inv, "provision", "nfs_servers", "pi-03")
        _report(f"pi-03 moved to {server}: provision rc {proc.returncode}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        srv = load(inv).servers[server]
        share = f"{srv.address}:{srv.export_root}/raspbian"
        sources = _mount_sources(lab, "pi-03")
        assert share in sources, (server, sources)
        assert all(s == share or s.startswith(f"{share}/") for s in sources), (server, sources)
    assert _mount_sources(lab, "pi-03") == before
