"""netroot's own SSH session (OpenSSH with one multiplexing master) against a real sshd in a
network namespace: what status, smoke and the preflight rely on."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from netroot.adapters.ssh import Session, Unreachable
from netroot.adapters.sshproc import TCP_ANSWER_S
from netroot.errors import Exit
from netroot.sshtarget import SshTarget
from tests.integration.provision_hosts import (
    NEEDS_HOSTS,
    NetnsHost,
    netns_host,
    start_sshd,
    stop_sshd,
)

pytestmark = NEEDS_HOSTS


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("session")) as h:
        yield h


def _target(host: NetnsHost, address: str | None = None, key: Path | None = None) -> SshTarget:
    return SshTarget(
        "pi-s", address or host.address, 22, "root", str(key or host.key), str(host.known_hosts),
        timeout=5, retries=0,
    )  # fmt: skip


def _masters(session: Session) -> list[str]:
    """The ssh processes serving this session's control socket."""
    found = subprocess.run(["pgrep", "-af", session.control_path], capture_output=True, text=True)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


def test_many_threads_share_one_master_and_close_ends_it(host: NetnsHost) -> None:
    """More commands at once than sshd's MaxSessions (10), and again after the master was
    closed: one master each time, and nothing of ssh's own in any command's stderr."""
    with Session(_target(host)) as session:
        for _ in range(2):
            with ThreadPoolExecutor(max_workers=16) as pool:
                results = list(pool.map(lambda i: session.run(f"sleep 0.5; echo {i}"), range(24)))
            assert [(r.rc, r.stdout, r.stderr) for r in results] == [
                (0, f"{i}\n".encode(), b"") for i in range(24)
            ]
            masters = _masters(session)
            assert len(masters) == 1 and "[mux]" in masters[0], masters
            session.close()
            assert _masters(session) == [] and not Path(session.control_path).exists()


def test_stdin_and_binary_stdout_pass_whole(host: NetnsHost) -> None:
    blob = bytes(range(256)) * 4096  # 1 MiB, every byte value
    with Session(_target(host)) as session:
        res = session.run("cat; printf '\\000\\377' >&2", stdin=blob)
    assert (res.rc, res.stdout, res.stderr) == (0, blob, b"\x00\xff")


def test_a_commands_own_255_is_its_exit_status_not_a_lost_connection(host: NetnsHost) -> None:
    with Session(_target(host)) as session:
        first = session.run("echo first; exit 255")  # the very first command starts the master
        again = session.run("exit 255")
        assert (first.rc, first.stdout, again.rc) == (255, b"first\n", 255)
        assert session.run("echo still").stdout == b"still\n"


def test_a_command_past_its_timeout_is_ended_and_the_session_goes_on(host: NetnsHost) -> None:
    with Session(_target(host)) as session:
        with pytest.raises(Unreachable, match="no answer to the command within 1 s"):
            session.run("sleep 30", timeout=1)
        assert session.run("echo ok").stdout == b"ok\n"


def test_sshd_gone_mid_session_is_unreachable_with_what_it_means(host: NetnsHost) -> None:
    session = Session(_target(host))
    try:
        assert session.run("true").rc == 0
        stop_sshd(host)  # the master's connection and sshd with it
        with pytest.raises(Unreachable) as err:
            session.run("true")
        assert err.value.code == Exit.UNREACHABLE
        assert "Connection refused" in err.value.message and "sshd running" in err.value.message
    finally:
        start_sshd(host)
        session.close()
    assert _masters(session) == []


@pytest.mark.parametrize("multiplex", [True, False])
def test_a_host_that_is_off_or_a_refused_key_says_which(
    host: NetnsHost, tmp_path: Path, multiplex: bool
) -> None:
    off_target = _target(host, host.spare)
    with pytest.raises(Unreachable) as off, Session(off_target, multiplex=multiplex) as session:
        session.run("true")
    # An address nobody has: the kernel's ARP gives up after 3 requests 1 s apart ("No route to
    # host"), about when netroot's TCP_ANSWER_S (3 s) ends the wait; either says powered off.
    said = off.value.message
    assert "No route to host" in said or "no answer to the connection" in said, said
    assert "powered off" in said, said
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")])
    denied_target = _target(host, key=tmp_path / "k")
    with pytest.raises(Unreachable) as denied, Session(denied_target, multiplex=multiplex) as s:
        s.run("true")
    assert "Permission denied (publickey" in denied.value.message, denied.value.message


@pytest.mark.parametrize("multiplex", [True, False])
def test_a_board_powered_off_a_moment_ago_is_said_off_without_waiting_out_the_timeout(
    tmp_path: Path, multiplex: bool
) -> None:
    """Its ARP entry still valid (REACHABLE for up to 45 s): ssh alone would wait out
    ConnectTimeout (30 s) and try again: 44-64 s measured, TCP_ANSWER_S (3 s) now
    (bench/bench_ssh.py)."""
    with netns_host(tmp_path) as board:
        target = SshTarget(
            "pi-off", board.address, 22, "root", str(board.key), str(board.known_hosts)
        )
        with Session(target) as session:
            assert session.run("true").rc == 0
        neigh = subprocess.run(["ip", "neigh", "show", board.address], capture_output=True)
        assert b"REACHABLE" in neigh.stdout
        # Power off: the address answers nothing (no ARP, no SYN/ACK); the link stays up.
        board.exec("ip", "addr", "del", f"{board.address}/24", "dev", "eth0")
        with pytest.raises(Unreachable) as err, Session(target, multiplex=multiplex) as session:
            session.run("true")
    message = err.value.message
    assert f"no answer to the connection to {board.address} within {TCP_ANSWER_S:g} s" in message
    assert "powered off" in message and "tries" not in message


def test_a_session_without_a_master_logs_in_for_each_command_and_leaves_nothing(
    host: NetnsHost,
) -> None:
    """The status probe's way: one ssh process a command, no master, nothing left running
    after it; stdin, stdout, stderr and exit status pass as through a master."""

    def ours() -> list[str]:
        found = subprocess.run(["pgrep", "-af", f"^ssh .*{host.address}"], capture_output=True)
        return found.stdout.decode().splitlines()

    with Session(_target(host), multiplex=False) as session:
        assert session.control_path == ""
        res = session.run("cat; echo err >&2; exit 3", stdin=b"in\n")
        assert (res.rc, res.stdout, res.stderr) == (3, b"in\n", b"err\n")
        with ThreadPoolExecutor(max_workers=1) as pool:
            running = pool.submit(session.run, "sleep 1; echo again")
            while not ours():
                assert not running.done(), running.result()
            during = ours()
            assert running.result().stdout == b"again\n"
    assert len(during) == 1 and "ControlPath=none" in during[0], during
    assert ours() == []
