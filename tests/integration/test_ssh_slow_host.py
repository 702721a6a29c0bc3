"""netroot's own SSH (OpenSSH, as Ansible runs it) waits and retries like Ansible with
netroot's ansible.cfg: a host that accepts the connection but stays silent is tried `retries`
more times and then reported as busy-or-down with the settings to raise; a host that closes
the connection is an answer, never retried. Real sockets on loopback, the real ssh client."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from netroot.adapters.ssh import Session, Unreachable
from netroot.sshtarget import SshTarget

pytestmark = pytest.mark.integration


class Listener:
    """127.0.0.1:PORT that accepts connections and either stays silent or hangs up."""

    def __init__(self, silent: bool) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.silent = silent
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            if self.silent:
                self.held.append(conn)  # open, never a byte: a board too busy to fork sshd
            else:
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def known_hosts(tmp_path: Path) -> Path:
    path = tmp_path / "known_hosts"
    path.write_text("")
    return path


def _target(port: int, known_hosts: Path, retries: int) -> SshTarget:
    return SshTarget(
        "pi-slow", "127.0.0.1", port, "pi", None, str(known_hosts), timeout=1, retries=retries
    )


@pytest.fixture
def silent() -> Iterator[Listener]:
    listener = Listener(silent=True)
    yield listener
    listener.close()


@pytest.fixture
def hangs_up() -> Iterator[Listener]:
    listener = Listener(silent=False)
    yield listener
    listener.close()


def test_a_silent_host_is_tried_again_then_reported_busy_or_down(
    silent: Listener, known_hosts: Path
) -> None:
    with pytest.raises(Unreachable) as err, Session(_target(silent.port, known_hosts, 1)) as s:
        s.run("true")
    assert silent.accepted == 2
    message = err.value.message
    assert "Connection timed out during banner exchange" in message, message
    assert "no answer within 1 s, 2 tries" in message, message
    assert "ansible_ssh_timeout" in message


def test_a_host_that_hangs_up_is_not_tried_again(hangs_up: Listener, known_hosts: Path) -> None:
    with pytest.raises(Unreachable), Session(_target(hangs_up.port, known_hosts, 2)) as s:
        s.run("true")
    assert hangs_up.accepted == 1


def test_a_closed_port_is_refused_at_once_and_says_sshd_is_not_answering(
    known_hosts: Path,
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]  # bound, never listening: the kernel refuses connections
    try:
        with pytest.raises(Unreachable) as err, Session(_target(port, known_hosts, 2)) as s:
            s.run("true")
    finally:
        closed.close()
    message = err.value.message
    assert "Connection refused" in message and "is sshd running?" in message, message
