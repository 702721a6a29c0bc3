"""Every ssh netroot runs, as a process: `call` runs one with its stdin under a time bound.

Each ssh runs in a session of its own (no terminal: no SIGINT from the keyboard, no prompt) and
is one of those `end_all` kills on a Ctrl-C, on the way out; one that outlives its time bound
is killed with its process group (a ProxyJump's ssh with it). Where asked, it also dies with
netroot itself (kill -9 included: PR_SET_PDEATHSIG). Sessions (netroot.adapters.ssh), the boot
stage's request (netroot.netboot.bootstage) and the export helper's one-shot requests
(netroot.export.serverroot) all run their ssh through `call`.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from netroot import threadwait
from netroot.errors import EnvironmentMissing

# ssh and the ssh of a ProxyJump get no terminal (a session of their own) and no askpass: a
# host key to confirm or a passphrase to type is a failure, never a prompt that hangs netroot.
_NO_PROMPT = {"SSH_ASKPASS_REQUIRE": "never"}

# A host that is up answers a TCP connection from its kernel at once (SYN-ACK, or RST from a
# closed port), however busy its sshd: the SSH answer may take the whole ConnectTimeout, the
# TCP answer does not. A connection unanswered for this long means a host that is gone. Its
# ARP entry may stay valid for up to 45 s after it went, all that time ssh would wait out its
# ConnectTimeout (30 s) and then try again, where a board that is off should be said at once.
# Why 3 s: Linux resends an unanswered SYN after its initial RTO of 1 s (RFC 6298), at 1 and
# 2 s since 6.5 (tcp_syn_linear_timeouts=4), at 1 and 3 s before: in 3 s a SYN or SYN-ACK
# lost once (a busy switch) is resent and still has 2 s to be answered, and the first SYN
# 3 s, where a board's kernel takes milliseconds (an emulated board's on a loaded host was
# not measured: bench/README.md). Any answer ends the wait: this is no deadline on a slow
# board, only on silence. bench/bench_ssh.py --power-off: 3.0 s, `status` 3.6-4.3 s.
TCP_ANSWER_S = 3.0
SYN_SENT = "02"  # the state of a socket waiting for the server's first answer (/proc/net/tcp)
PR_SET_PDEATHSIG = 1


class SshTimeout(TimeoutError):
    """An ssh that outlived its time bound (it was killed, with its process group)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds = seconds


class NoTcpAnswer(Exception):
    """ssh's connection got no answer at all in TCP_ANSWER_S (a `call` with `watch`)."""


def syn_sent_inodes(table: str) -> set[str]:
    """The inodes of the sockets waiting for a first answer in a /proc/net/tcp table (pure)."""
    found = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == SYN_SENT:
            found.add(fields[9])
    return found


def _still_connecting(pid: int) -> bool:
    """Whether process `pid` (ssh, connecting directly) has a TCP connection left unanswered."""
    try:
        links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:
        return False  # gone, or not Linux: nothing to say early
    inodes = {link[8:-1] for link in links if link.startswith("socket:[")}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            if syn_sent_inodes(Path(table).read_text()) & inodes:
                return True
    return False


@functools.cache
def _prctl() -> Any:
    # Looked up once, in the parent: between fork and exec the child of a netroot that runs
    # threads (one per server, export/fanout.py) must not dlopen (a lock another thread may
    # have held at the fork).
    return ctypes.CDLL(None, use_errno=True).prctl


def die_with_netroot() -> Callable[[], None]:
    """A preexec_fn: the child is SIGKILLed when the thread that started it ends (netroot
    killed, kill -9 included; that thread waits for it). It costs the fork Python's vfork
    would spare: ~1 ms of CPU a child on the 2-core machine, 10x a plain spawn's."""
    prctl = _prctl()  # resolved here, before the fork
    return lambda: prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# Every ssh this process runs, while it runs: a Ctrl-C ends them (end_all). Each is in a session
# of its own (no terminal, no SIGINT from the keyboard) and would outlive netroot, which exits
# without waiting for its worker threads, up to the connection's timeout.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
_ENDING = threading.Event()


def end_all() -> None:
    """Kill every ssh this process runs, and any it starts from now on: for a Ctrl-C, on the
    way out (netroot exits then). Masters of multiplexing sessions are left to Session.close
    or their ControlPersist."""
    _ENDING.set()
    with _LIVE_LOCK:
        for proc in _LIVE:
            _kill(proc)


T = TypeVar("T")
R = TypeVar("R")


def each_host(run: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """`run` on every item at once (at most `workers` threads), results in order. On Ctrl-C
    nothing waits for a silent host (up to a minute) and no ssh is left behind: each runs in a
    session of its own, out of the keyboard's reach (end_all). Not pool.map: its wait would not
    notice a Ctrl-C a worker thread took (threadwait)."""
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(items))))
    try:
        found = threadwait.results([pool.submit(run, item) for item in items])
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        end_all()
        raise
    pool.shutdown()
    return found


def _kill(proc: subprocess.Popen[bytes]) -> None:
    # The whole process group (start_new_session: the ssh's own): a ProxyJump's ssh with it.
    if proc.returncode is None:  # not reaped yet: its pid is still its own
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def _ending(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """`proc` one of those end_all kills while the block runs; killed when the block ends if
    it still runs (a timeout, an error)."""
    with _LIVE_LOCK:
        _LIVE.add(proc)
        if _ENDING.is_set():  # started as end_all ran: ended as the others were
            _kill(proc)
    try:
        yield
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        _kill(proc)


def call(
    argv: list[str],
    stdin: bytes | None = None,
    timeout: float | None = None,
    *,
    watch: bool = False,
    dies_with_netroot: bool = False,
) -> tuple[int, bytes, bytes]:
    """Run ssh `argv` fed `stdin` (None: /dev/null); (rc, stdout, stderr) once it exits.

    SshTimeout when it outlives `timeout` seconds; killed by end_all (rc -9) while it runs.
    `watch`: NoTcpAnswer when its own connection is unanswered after TCP_ANSWER_S.
    `dies_with_netroot`: it dies with netroot too (die_with_netroot), for a request that must not
    go on on the server once netroot is gone; sessions' many short commands go without.
    """
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **_NO_PROMPT},
            start_new_session=True,
            preexec_fn=die_with_netroot() if dies_with_netroot else None,
        )
    except FileNotFoundError:
        raise EnvironmentMissing(
            f"{argv[0]}: not installed on this control host",
            "install the OpenSSH client (apt-get install openssh-client)",
        ) from None
    with _ending(proc):
        try:
            if watch and (timeout is None or timeout > TCP_ANSWER_S):
                try:
                    out, err = proc.communicate(stdin, timeout=TCP_ANSWER_S)
                except subprocess.TimeoutExpired:
                    if _still_connecting(proc.pid):
                        raise NoTcpAnswer from None
                    rest = None if timeout is None else timeout - TCP_ANSWER_S
                    out, err = proc.communicate(timeout=rest)  # input goes on being fed
            else:
                out, err = proc.communicate(stdin, timeout=timeout)
        except BaseException as exc:  # a timeout, no answer, Ctrl-C: no ssh left behind
            _kill(proc)  # its group, while its pid is still its own (before the wait)
            proc.wait()
            # Not read to the end: a multiplexed command's stdout and stderr were handed to
            # the master, which holds them until the remote command ends.
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            if isinstance(exc, subprocess.TimeoutExpired):
                assert timeout is not None  # only a bound expires
                raise SshTimeout(timeout) from None
            raise
    return proc.returncode, out, err
