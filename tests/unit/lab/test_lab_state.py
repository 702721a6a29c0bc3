"""The lab status model: what counts as 'up'."""

from __future__ import annotations

from pathlib import Path

from netroot.lab import state


def _host(name: str, role: str, running: bool = True, ssh: bool = True) -> state.HostStatus:
    return state.HostStatus(name, role, "10.77.0.9", 42 if running else None, running, ssh)


def test_up_needs_network_every_planned_board_and_ssh_everywhere() -> None:
    hosts = (_host("nfs-01", "server"), _host("pi-01", "board"), _host("pi-02", "board"))
    assert state.LabStatus(True, hosts, "inv", 2).up
    assert not state.LabStatus(False, hosts, "inv", 2).up
    assert not state.LabStatus(True, hosts, "inv", 3).up
    assert not state.LabStatus(True, hosts, "inv", 0).up
    down = (hosts[0], hosts[1], _host("pi-02", "board", ssh=False))
    assert not state.LabStatus(True, down, "inv", 2).up
    assert state.LabStatus(True, down, "inv", 2).anything_running


def test_state_file_round_trips(tmp_path: Path) -> None:
    f = tmp_path / "lab" / "state.json"
    state.save(f, 3, Path("/srv/x"))
    assert state.load(f) == {
        "boards": 3,
        "export_root": "/srv/x",
        "arch": "armhf",
        "netboot": 0,
        "server": "ganesha",
        "servers": 1,
        "arm64": 0,
        "board_kind": "qemu",
    }
    state.save(f, 2, Path("/srv/x"), server="kernel", servers=2, arm64=1)
    assert state.load(f)["arm64"] == 1
    assert (state.load(f)["server"], state.load(f)["servers"]) == ("kernel", 2)
    assert state.load(tmp_path / "missing.json") == {}
    (tmp_path / "bad.json").write_text("{")
    assert state.load(tmp_path / "bad.json") == {}
