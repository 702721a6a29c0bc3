"""The status probe: one ssh process a board, and a Ctrl-C leaves none of them running (each is in
a session of its own, out of the keyboard's reach, and netroot exits without waiting for its
threads). Real `netroot status`, real ssh, against ports that accept and never answer."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from netroot.errors import Exit
from tests.interrupts import sigint_as_at_a_terminal

BOARDS = (3, 4, 5, 6)  # 127.0.0.N


@pytest.fixture
def silent() -> Iterator[tuple[int, list[socket.socket]]]:
    """A port that accepts on each board's loopback address and never says a word."""
    first = socket.create_server((f"127.0.0.{BOARDS[0]}", 0))
    port = first.getsockname()[1]
    listening = [first, *(socket.create_server((f"127.0.0.{n}", port)) for n in BOARDS[1:])]
    yield port, listening
    for s in listening:
        s.close()


def _ssh_on(port: int) -> list[str]:
    found = subprocess.run(["pgrep", "-af", f"^ssh .*Port={port} "], capture_output=True)
    return found.stdout.decode().splitlines()


def test_ctrl_c_during_status_leaves_no_ssh_behind(
    tmp_path: Path, silent: tuple[int, list[socket.socket]]
) -> None:
    port, listening = silent
    known = tmp_path / "known_hosts"
    known.write_text("")
    boards = {
        f"pi-0{i}": {"ansible_host": f"127.0.0.{n}", "ansible_port": port,
                     "netroot_known_hosts": str(known)}
        for i, n in enumerate(BOARDS, 1)
    }  # fmt: skip
    server = {"ansible_host": "127.0.0.2", "netroot_export_root": str(tmp_path / "root")}
    (tmp_path / "root").mkdir()
    inv = tmp_path / "inventory.yml"
    data = {"nfs_servers": {"hosts": {"nfs-01": server}}, "boards": {"hosts": boards}}
    inv.write_text(yaml.safe_dump({"all": {"children": data}}))
    env = {**os.environ, "NETROOT_HOME": str(tmp_path), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "netroot", "status", "-i", str(inv)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env, preexec_fn=sigint_as_at_a_terminal,
    )  # fmt: skip
    # Every board's ssh waits in a listening queue (readable then): no fixed sleep, a loaded
    # machine may still be starting Python.
    deadline = time.monotonic() + 120
    while len(select.select(listening, [], [], 0.2)[0]) < len(listening):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
    waiting = _ssh_on(port)
    assert len(waiting) == len(BOARDS), waiting  # one process a board: no master beside it
    assert all("ControlPath=none" in line for line in waiting), waiting
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == Exit.INTERRUPTED, err
    gone = time.monotonic() + 5  # killed at once; reaped by init a moment later
    while _ssh_on(port) and time.monotonic() < gone:
        time.sleep(0.1)
    assert _ssh_on(port) == []
