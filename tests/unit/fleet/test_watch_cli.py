"""`netroot events`, `netroot metrics` and status's stuck line, through the CLI, on a tmp export
root whose boards are closed ports on loopback (unreachable at once)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from netroot.fleet.state import load_state
from tests.unit.core.fleetkit import netroot_cli


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    boards = {
        f"pi-0{i}": {"ansible_host": f"127.0.0.{10 + i}", "ansible_port": 1, "netroot_image": "img"}
        for i in range(1, 4)
    }
    server = {"ansible_host": "127.0.0.2", "ansible_port": 1, "netroot_export_root": str(root)}
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": server}},
                                 "boards": {"hosts": boards}}}}  # fmt: skip
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(data))
    state = load_state(root)
    state.command = "rollout img"
    for name in boards:
        st = state.board(name)
        st.assigned, st.phase = "a" * 12, "ok"
    state.save()
    st = state.board("pi-02")
    st.assigned, st.phase = "b" * 12, "switching"  # it went away mid-switch
    state.save()
    return inv, root


def test_events_are_listed_filtered_and_json(tmp_path: Path) -> None:
    inv, _root = _setup(tmp_path)
    proc = netroot_cli(inv, "events", "--json", "--board", "pi-02")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {e["board"] for e in lines} == {"pi-02"}
    assert [e["event"] for e in lines][-1] == "switching"
    assigned = [e for e in lines if e["event"] == "assigned"]
    assert assigned[-1]["from"] == "a" * 12 and assigned[-1]["command"] == "rollout img"
    plain = netroot_cli(inv, "events", "--since", "1h").stdout.splitlines()
    assert len(plain) == 8 and all(" pi-0" in line for line in plain)  # 3 x 2, then pi-02 x 2
    assert netroot_cli(inv, "events", "--since", "2999-01-01").stdout == ""


def test_events_refuse_a_bad_time_or_board_in_one_line(tmp_path: Path) -> None:
    inv, _root = _setup(tmp_path)
    for args, word in ((["--since", "yesterday"], "--since"), (["--board", "pi-09"], "pi-09")):
        proc = netroot_cli(inv, "events", *args)
        assert proc.returncode == 2
        assert word in proc.stderr and "Traceback" not in proc.stderr


def test_metrics_written_for_the_textfile_collector_and_status_names_the_stuck_board(
    tmp_path: Path,
) -> None:
    inv, _root = _setup(tmp_path)
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    proc = netroot_cli(inv, "metrics", "--textfile", str(textfile))
    assert proc.returncode == 0, proc.stderr
    written = (textfile / "netroot.prom").read_text()
    assert written == proc.stdout
    assert 'netroot_board_up{board="pi-02",server="nfs-01"} 0' in written.splitlines()
    assert oct((textfile / "netroot.prom").stat().st_mode & 0o777) == "0o644"
    status = netroot_cli(inv, "status")
    assert "pi-02: last seen switching" in status.stderr
    assert "pi-01: last seen" not in status.stderr  # ended its operation: not stuck


def test_events_as_tsv_have_a_header_and_whole_cells(tmp_path: Path) -> None:
    inv, _root = _setup(tmp_path)
    lines = netroot_cli(inv, "events", "--tsv", "--board", "pi-02").stdout.splitlines()
    header = ["time", "board", "event", "version", "reason", "from", "command"]
    assert lines[0].split("\t") == header
    rows = [line.split("\t") for line in lines[1:]]
    assert all(len(r) == 7 for r in rows) and rows[-1][1:4] == ["pi-02", "switching", "b" * 12]


def test_events_follow_prints_each_new_event_once(tmp_path: Path) -> None:
    import os
    import select
    import subprocess
    import sys

    inv, root = _setup(tmp_path)
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "netroot", "-i", str(inv), "events", "--follow", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    fd, buf = proc.stdout.fileno(), [b""]

    def lines(count: int) -> list[dict[str, str]]:
        while buf[0].count(b"\n") < count:  # the pipe's own bytes: no reader's buffer between
            ready, _, _ = select.select([fd], [], [], 60)
            assert ready, f"events --follow printed {buf[0]!r} and then nothing"
            buf[0] += os.read(fd, 1 << 16)
        *got, buf[0] = buf[0].split(b"\n", count)
        return [json.loads(line) for line in got]

    try:
        assert len(lines(8)) == 8  # what was there: once
        for version in ("c" * 12, "d" * 12):  # then each change as it is saved
            state = load_state(root)
            state.board("pi-03").assigned = version
            state.save()
            new = lines(1)
            assert (new[0]["board"], new[0]["event"], new[0]["version"]) == (
                "pi-03",
                "assigned",
                version,
            )
        ready, _, _ = select.select([fd], [], [], 3)  # and nothing printed twice
        assert not ready and buf[0] == b""
    finally:
        proc.kill()
        proc.wait()
