"""Ctrl-C exits 130 with one line saying what was committed: nothing, for a command that only
reads; what it committed, where netroot knows (an export, a rollout's boards)."""

from __future__ import annotations

import ctypes
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

from netroot.cli.interrupted import rolled_back, switched
from netroot.errors import Exit
from netroot.export.here import committed_since
from netroot.fleet.state import BoardState, State
from netroot.remote.fleet import STATE_NAME
from tests.interrupts import sigint_as_at_a_terminal


@pytest.fixture
def silent_port() -> Iterator[tuple[int, list[socket.socket]]]:
    """A port on the hosts' loopback addresses that accepts and never says a word: an SSH
    client waits there for the server's banner until its timeout. Yields the port and the
    listening sockets (readable once a client has connected)."""
    first = socket.create_server(("127.0.0.2", 0))
    port = first.getsockname()[1]
    others = [socket.create_server((f"127.0.0.{n}", port)) for n in (3, 4)]
    yield port, [first, *others]
    for s in (first, *others):
        s.close()


def _to_a_worker_thread(pid: int, sig: int) -> None:
    """Send `sig` to one of process `pid`'s threads other than its main one (tgkill(2))."""
    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    assert tids, "the process has no thread but its main one"
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.tgkill(pid, tids[0], sig) == 0, os.strerror(ctypes.get_errno())


def _interrupted(
    tmp_path: Path, silent: tuple[int, list[socket.socket]], *args: str, to_worker: bool = False
) -> subprocess.CompletedProcess[str]:
    port, listening = silent
    known = tmp_path / "known_hosts"
    known.write_text("")
    hosts = {
        name: {"ansible_host": f"127.0.0.{n}", "ansible_port": port,
               "netroot_known_hosts": str(known)}
        for name, n in (("nfs-01", 2), ("pi-01", 3), ("pi-02", 4))
    }  # fmt: skip
    hosts["nfs-01"]["netroot_export_root"] = str(tmp_path / "root")
    (tmp_path / "root").mkdir()
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": hosts.pop("nfs-01")}},
                                 "boards": {"hosts": hosts}}}}  # fmt: skip
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(data))
    env = {**os.environ, "NETROOT_HOME": str(tmp_path), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "netroot", *args, "-i", str(inv)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env, preexec_fn=sigint_as_at_a_terminal,
    )  # fmt: skip
    # Interrupted once it waits on the silent hosts (the probes wait up to a minute): a
    # connection waits in a listening socket's queue, which makes it readable. Not a fixed
    # sleep: a loaded machine may still be starting Python then.
    deadline = time.monotonic() + 120
    while not select.select(listening, [], [], 0.2)[0]:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
    time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    if to_worker:
        _to_a_worker_thread(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running 30 s after SIGINT; stderr: {err[-2000:]}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("args", [("status",), ("smoke", "boards")])
def test_ctrl_c_while_waiting_on_hosts(
    args: tuple[str, ...], tmp_path: Path, silent_port: tuple[int, list[socket.socket]]
) -> None:
    done = _interrupted(tmp_path, silent_port, *args)
    assert done.returncode == Exit.INTERRUPTED
    assert done.stderr.splitlines()[-1] == "interrupted: nothing committed", done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "root" / STATE_NAME).exists()  # smoke recorded nothing


@pytest.mark.parametrize("args", [("status",), ("smoke", "boards")])
def test_ctrl_c_taken_by_a_worker_thread(
    args: tuple[str, ...], tmp_path: Path, silent_port: tuple[int, list[socket.socket]]
) -> None:
    """The flake of the test above, made certain. Linux gives a process's SIGINT to any of its
    threads that does not block it: to a worker when the main thread has signals blocked at
    that moment (glibc blocks them all while it creates a thread; strace's stops do it too).
    CPython runs Python's handler in the main thread only, and a main thread asleep on a
    future's lock is not woken by a signal another thread took: it slept on until the probes
    gave up (a minute), where Ctrl-C must end the command at once."""
    done = _interrupted(tmp_path, silent_port, *args, to_worker=True)
    assert done.returncode == Exit.INTERRUPTED, done.stderr
    assert done.stderr.splitlines()[-1] == "interrupted: nothing committed", done.stderr


def test_an_export_says_whether_it_committed(tmp_path: Path) -> None:
    versions = tmp_path / "img" / "versions"
    versions.mkdir(parents=True)
    (versions / "0000000000000001.json").write_text("{}")
    os.symlink("versions/0000000000000001", tmp_path / "img" / "current")
    said = committed_since(tmp_path, "img")
    assert said() == "interrupted: nothing committed (img's current is unchanged)"
    (versions / "0000000000000002.json").write_text("{}")  # its manifest renamed in: committed
    assert said() == "interrupted: img 0000000000000002 committed; current unchanged"


class _Fleet:
    def __init__(self, state: State) -> None:
        self.state = state

    def load(self) -> State:
        return self.state


def test_a_rollout_says_which_boardsswitched(tmp_path: Path) -> None:
    state = State(tmp_path / "state.json")
    state.boards["pi-01"] = BoardState(assigned="bbbb")
    state.boards["pi-02"] = BoardState(assigned="aaaa")
    said = switched(_Fleet(state), ["pi-01", "pi-02", "pi-03"], "bbbb")
    assert said.startswith("interrupted: 1 of 3 boards switched to bbbb (pi-01)"), said
    state.boards["pi-01"].assigned = "aaaa"
    assert switched(_Fleet(state), ["pi-01"], "bbbb").startswith("interrupted: no board")


def test_a_rollback_says_which_boards_are_back(tmp_path: Path) -> None:
    state = State(tmp_path / "state.json")
    state.boards["pi-01"] = BoardState(assigned="aaaa")
    state.boards["pi-02"] = BoardState(assigned="bbbb")
    said = rolled_back(_Fleet(state), {"pi-01": "aaaa", "pi-02": "aaaa"})
    assert said == "interrupted: rolled back pi-01; the others unchanged"
