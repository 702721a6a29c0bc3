"""netroot.adapters.sshproc.call on real children (`sh -c` in place of ssh): stdin delivered,
the time bound kept with the whole process group ended, end_all ending a call that runs and
one started after it, and a child that dies with netroot only where asked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netroot.adapters import sshproc
from netroot.adapters.sshproc import SshTimeout, call, end_all
from netroot.errors import EnvironmentMissing

ROOT = Path(__file__).resolve().parents[3]


def _alive(pid: int) -> bool:
    """Runs (a zombie nobody reaped yet runs nothing)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait(what: str, ok: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not ok():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Callable[[], list[int]]]:
    """The pids a child writes to tmp_path/"pids" (then "end"); any still running at the end of
    the test are killed (a failing test leaves no `sleep 600` behind)."""
    path, seen = tmp_path / "pids", list[int]()

    def read() -> list[int]:
        _wait(f"nothing written to {path}", lambda: path.exists() and "end" in path.read_text())
        seen.extend(int(word) for word in path.read_text().split() if word.isdigit())
        return seen

    yield read
    for pid in seen:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def not_ending(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """end_all's mark for this test only (it stays set for the rest of a process's life)."""
    monkeypatch.setattr(sshproc, "_ENDING", threading.Event())
    yield


def test_stdin_is_delivered_and_rc_stdout_stderr_come_back() -> None:
    rc, out, err = call(["sh", "-c", "tr a-z A-Z; echo said >&2; exit 3"], b"hello\n", 30)
    assert (rc, out, err) == (3, b"HELLO\n", b"said\n")
    # No stdin: /dev/null, not netroot's own (a `cat` would wait on the terminal).
    assert call(["sh", "-c", "cat; echo done"], None, 30) == (0, b"done\n", b"")
    # Input larger than a pipe's buffer, fed while the output is read.
    big = os.urandom(1 << 20)
    assert call(["cat"], big, 30) == (0, big, b"")


def test_a_call_that_outlives_its_bound_is_ended_with_its_process_group(
    tmp_path: Path, pids: Callable[[], list[int]]
) -> None:
    # The child and a grandchild of its own (as ssh and a ProxyJump's ssh); neither answers.
    script = f"sleep 600 & echo $$ $! end > {tmp_path / 'pids'}; wait"
    with pytest.raises(SshTimeout) as raised:
        call(["sh", "-c", script], None, 0.5)
    assert raised.value.seconds == 0.5 and isinstance(raised.value, TimeoutError)
    assert str(raised.value) == "no answer within 0.5 s"
    child, grandchild = pids()
    assert not _alive(child)  # reaped by call: no zombie left either
    _wait(f"the grandchild {grandchild} still runs", lambda: not _alive(grandchild))


def test_end_all_ends_a_call_that_runs_and_any_started_after(
    tmp_path: Path, pids: Callable[[], list[int]], not_ending: None
) -> None:
    script = f"echo $$ end > {tmp_path / 'pids'}; exec sleep 600"
    found: list[tuple[int, bytes, bytes]] = []
    worker = threading.Thread(target=lambda: found.append(call(["sh", "-c", script])))
    worker.start()
    [pid] = pids()
    end_all()
    worker.join(30)
    assert not worker.is_alive(), "the call still waits after end_all"
    assert found == [(-signal.SIGKILL, b"", b"")] and not _alive(pid)
    # One started after end_all is ended as it starts (netroot is on its way out).
    rc, _, _ = call(["sh", "-c", "exec sleep 600"], None, 30)
    assert rc == -signal.SIGKILL


def test_a_missing_ssh_is_said_with_what_to_install() -> None:
    with pytest.raises(EnvironmentMissing, match="/nonexistent/ssh: not installed"):
        call(["/nonexistent/ssh"])


@pytest.mark.parametrize("dies", [True, False])
def test_a_child_dies_with_netroot_only_where_asked(
    tmp_path: Path, pids: Callable[[], list[int]], dies: bool
) -> None:
    """netroot killed -9 mid-call: the kernel ends a child started with dies_with_netroot; one
    without it goes on (a session's short command, out of the keyboard's reach)."""
    code = (
        "from netroot.adapters.sshproc import call; call(['sh', '-c', "
        f"'echo $$ end > {tmp_path / 'pids'}; exec sleep 600'], dies_with_netroot={dies})"
    )
    netroot = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env={**os.environ,
                               "PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        [pid] = pids()
    finally:
        netroot.kill()
        netroot.wait()
    if dies:
        _wait(f"the child {pid} outlived netroot", lambda: not _alive(pid))
    else:
        time.sleep(0.5)  # what the kernel would have done, it does at once
        assert _alive(pid)
