"""netroot's own SSH sessions: the OpenSSH client, with the argv Ansible builds for the same
inventory (netroot.sshtarget.ssh_argv), so ~/.ssh/config, the agent and jump hosts serve
status, smoke and the sudo preflight as they serve `provision`. Host keys are checked, never
auto-accepted; nothing prompts.

A Session is one multiplexing master per host (ControlMaster): its first command logs in, the
next ones reuse the connection. The master lives in a private directory of this user under
$XDG_RUNTIME_DIR or /tmp (a socket path has room for ~100 bytes), is told to exit when the
session closes, and exits by itself after ControlPersist of idleness if netroot dies first.
A session for one command (the status probe) has no master: one ssh process, one login.

Where neither ~/.ssh/config, the system's ssh config nor the inventory chose the key exchange,
netroot's sessions put the fast ones first (sshtarget.fast_kex): OpenSSH 9.x's post-quantum
default costs the controller ~65 ms of CPU a login.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import secrets
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from netroot import threadwait
from netroot.errors import EnvironmentMissing, Exit, NetrootError, UsageError
from netroot.sshtarget import (
    SLOW_ANSWER,
    SshTarget,
    parse_ssh_config,
    ssh_argv,
    ssh_said,
    with_config,
    with_meaning,
)


@dataclass(frozen=True)
class Result:
    rc: int
    stdout: bytes
    stderr: bytes


class TargetError(NetrootError):
    """An error about one SSH target, which it keeps as `target`."""

    def __init__(self, target: SshTarget, message: str, hint: str, code: Exit) -> None:
        super().__init__(message, hint, code)
        self.target = target


class Unreachable(TargetError):
    """No session with the host. The message says what SSH said and, where the words tell,
    what it means and what to do (`with_meaning`, the table Ansible's messages use)."""

    def __init__(self, target: SshTarget, why: str, meaning: str | None = None) -> None:
        where = f"{target.name} ({target.where})"
        said = with_meaning(why, meaning)
        hint = "is the board up and in the inventory's known_hosts? (`netroot lab status`)"
        super().__init__(target, f"{where} unreachable: {said}", hint, Exit.UNREACHABLE)


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
GONE = (
    "nothing answers at that address (a host that is up answers a connection at once, however "
    "busy): the host is powered off, unplugged or not on this network; check its power and "
    "cabling, and its ansible_host"
)


MAX_SESSIONS = 8
# What ssh says on stderr when it could not multiplex and logged in beside the master (the
# command still ran): not the command's words, which callers read (sudo's refusals).
_MUX_NOISE = re.compile(
    rb"^(?:mux_client_\w+: .*|ControlSocket .* already exists, disabling multiplexing)\r?\n",
    re.MULTILINE,
)


class _NoTcpAnswer(Exception):
    """ssh's connection got no answer at all in TCP_ANSWER_S."""


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


def _spawn(
    argv: list[str], stdin: bytes | None, timeout: float | None, watch: bool = False
) -> tuple[int, bytes, bytes]:
    """Run ssh; (rc, stdout, stderr). TimeoutError when it outlives `timeout` (then killed);
    `watch`: _NoTcpAnswer when its own connection is unanswered after TCP_ANSWER_S."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **_NO_PROMPT},
            start_new_session=True,
        )
    except FileNotFoundError:
        raise EnvironmentMissing(
            f"{argv[0]}: not installed on this control host",
            "install the OpenSSH client (apt-get install openssh-client)",
        ) from None
    with ending(proc):
        try:
            if watch and (timeout is None or timeout > TCP_ANSWER_S):
                try:
                    out, err = proc.communicate(stdin, timeout=TCP_ANSWER_S)
                except subprocess.TimeoutExpired:
                    if _still_connecting(proc.pid):
                        raise _NoTcpAnswer from None
                    rest = None if timeout is None else timeout - TCP_ANSWER_S
                    out, err = proc.communicate(timeout=rest)  # input goes on being fed
            else:
                out, err = proc.communicate(stdin, timeout=timeout)
        except BaseException as exc:  # a timeout, no answer, Ctrl-C: no ssh left behind
            proc.kill()
            proc.wait()
            # Not read to the end: a multiplexed command's stdout and stderr were handed to
            # the master, which holds them until the remote command ends.
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise TimeoutError from None
            raise
    return proc.returncode, out, err


@contextlib.contextmanager
def ending(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """`proc` (an ssh in a session of its own) one of those end_all kills while the block
    runs; killed when the block ends if it still runs (a timeout, an error)."""
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


def resolve(target: SshTarget) -> SshTarget:
    """`target` as ~/.ssh/config (or OpenSSH's defaults) completes it, as `ssh -G` says: the
    user and port where the inventory sets none (who logs in decides whether sudo is needed),
    and the fast key exchanges first where nothing chose the key exchange (sshtarget.fast_kex:
    a login's CPU on the controller falls from ~80 to ~10 ms)."""
    target = replace(target, kex=None)  # what ssh itself would do, not netroot's last choice
    rc, out, err = _spawn([*ssh_argv(target), "-G", target.host], None, 30)
    if rc != 0:
        said = ssh_said(err.decode(errors="replace"))
        raise UsageError(
            f"{target.name}: ssh refuses its options: {said}",
            "check ansible_ssh_args, ansible_ssh_common_args, ansible_ssh_extra_args and "
            "~/.ssh/config",
        )
    config = parse_ssh_config(out.decode(errors="replace"))
    return with_config(target, config, _default_kex(target.executable))


@functools.cache
def _default_kex(executable: str) -> str | None:
    """The key exchanges `executable` offers when no config file says any (None: unknown)."""
    with contextlib.suppress(TimeoutError, NetrootError):
        rc, out, _ = _spawn([executable, "-F", "/dev/null", "-G", "netroot.invalid"], None, 30)
        if rc == 0:
            return parse_ssh_config(out.decode(errors="replace")).get("kexalgorithms")
    return None


@functools.cache
def _control_dir() -> Path:
    """A directory only this user can enter, with a short path (sockets live there)."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if not base or len(base) > 40 or not os.path.isdir(base):
        base = tempfile.gettempdir() if len(tempfile.gettempdir()) <= 40 else "/tmp"
    path = Path(base) / f"netroot-ssh-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
        private = stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077
        if private and info.st_uid == os.getuid():
            return path
    except OSError:
        pass
    # Somebody else's, or not a directory: a fresh one of our own (mkdtemp makes it 0700).
    return Path(tempfile.mkdtemp(prefix="nrssh-", dir=base))


class Session:
    """One SSH connection to one host; commands run with their exit code, not raised.

    Threads may share a session: every command is its own ssh process on the one master.
    `multiplex=False`: no master, each command its own login (one ssh process, where a master
    is a second one and closing it a third: for a single command, 18 vs 10 ms of CPU). Such a
    session cannot tell a command's own exit status 255 from ssh's: give it only commands that
    never exit 255 (the status probe).
    """

    def __init__(
        self, target: SshTarget, connect_timeout: float | None = None, multiplex: bool = True
    ) -> None:
        if connect_timeout is not None:
            target = replace(target, timeout=connect_timeout)
        self.target = resolve(target)
        self._control = str(_control_dir() / secrets.token_hex(5)) if multiplex else None
        # The first command starts the master; others wait for it rather than race to start
        # their own (the loser would log in again, without multiplexing).
        self._first = threading.Lock()
        self._started = False
        # sshd's MaxSessions (10 by default) bounds the commands one master carries at once;
        # past it, ssh logs in again beside the master.
        self._slots = threading.BoundedSemaphore(MAX_SESSIONS)

    @property
    def control_path(self) -> str:
        """The socket of this session's master (it exists while the master runs); "" for a
        session without one."""
        return self._control or ""

    def _argv(self, *rest: str) -> list[str]:
        return [*ssh_argv(self.target, self._control), *rest]

    def _master_up(self) -> bool:
        if self._control is None:
            return False  # no master: 255 is ssh's own failure
        rc, _, _ = _spawn(self._argv("-O", "check", self.target.host), None, 30)
        return rc == 0

    def run(self, command: str, stdin: bytes | None = None, timeout: float | None = None) -> Result:
        """Run a shell command; returns rc/stdout/stderr. No session raises Unreachable.

        A connection that times out is tried again (after 0 s, 1 s, 3 s...) up to the
        target's retries, as Ansible does: a busy board (booting, emulated on a loaded machine)
        may miss a timeout. A wrong host key, a refused login or a refused connection is an
        answer, and is never retried; nor is a connection lost after it was made (the command
        may have run).
        """
        with self._slots:
            if self._started or self._control is None:
                return self._run(command, stdin, timeout)
            with self._first:
                try:
                    return self._run(command, stdin, timeout)
                finally:
                    self._started = True

    def _run(self, command: str, stdin: bytes | None, timeout: float | None) -> Result:
        argv = self._argv(self.target.host, command)
        for attempt in range(self.target.retries + 1):
            try:
                rc, out, err = _spawn(argv, stdin, timeout, watch=True)
            except _NoTcpAnswer:
                target = self.target
                why = f"no answer to the connection to {target.host} within {TCP_ANSWER_S:g} s"
                raise Unreachable(target, why, GONE) from None
            except TimeoutError:
                # As a lost connection: the master goes (the command with it); the next
                # command logs in afresh.
                self.close()
                why = f"no answer to the command within {timeout:g} s"
                raise Unreachable(self.target, why) from None
            # 255 is ssh's own failure, or the command's own exit status: a master still up
            # after it means the connection held, so the command said 255.
            if rc != 255 or self._master_up():
                return Result(rc, out, _MUX_NOISE.sub(b"", err))
            said = ssh_said(err.decode(errors="replace"))
            slow = "Connection timed out" in said
            if not slow:
                raise Unreachable(self.target, said)
            if attempt == self.target.retries:
                tries = f", {attempt + 1} tries" if attempt else ""
                waited = f"no answer within {math.ceil(self.target.timeout)} s{tries}"
                raise Unreachable(self.target, f"{said}: {waited}", SLOW_ANSWER)
            time.sleep(min(2**attempt - 1, 30))
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def run_privileged(
        self, command: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> Result:
        """Run `command` as root: directly when logged in as root, else through `sudo -n`."""
        return self.run(self.target.privileged(command), stdin=stdin, timeout=timeout)

    def close(self) -> None:
        """Stop the master (and with it every command still running on it)."""
        if self._control is not None and os.path.exists(self._control):
            with contextlib.suppress(TimeoutError):  # else ControlPersist ends it
                _spawn(self._argv("-O", "exit", self.target.host), None, 30)
        self._started = False  # the next command starts a master again, alone

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
