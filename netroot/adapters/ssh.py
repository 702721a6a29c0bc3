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

Each ssh process runs through netroot.adapters.sshproc.call: out of the keyboard's reach, under
a time bound, ended by a Ctrl-C (end_all).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from netroot.adapters.sshproc import TCP_ANSWER_S, NoTcpAnswer, SshTimeout, call
from netroot.errors import Exit, NetrootError, UsageError
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


# Said of a host whose connection got no answer in TCP_ANSWER_S (sshproc: why 3 s).
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


def resolve(target: SshTarget) -> SshTarget:
    """`target` as ~/.ssh/config (or OpenSSH's defaults) completes it, as `ssh -G` says: the
    user and port where the inventory sets none (who logs in decides whether sudo is needed),
    and the fast key exchanges first where nothing chose the key exchange (sshtarget.fast_kex:
    a login's CPU on the controller falls from ~80 to ~10 ms)."""
    target = replace(target, kex=None)  # what ssh itself would do, not netroot's last choice
    rc, out, err = call([*ssh_argv(target), "-G", target.host], None, 30)
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
    with contextlib.suppress(SshTimeout, NetrootError):
        rc, out, _ = call([executable, "-F", "/dev/null", "-G", "netroot.invalid"], None, 30)
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
        rc, _, _ = call(self._argv("-O", "check", self.target.host), None, 30)
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
                rc, out, err = call(argv, stdin, timeout, watch=True)
            except NoTcpAnswer:
                target = self.target
                why = f"no answer to the connection to {target.host} within {TCP_ANSWER_S:g} s"
                raise Unreachable(target, why, GONE) from None
            except SshTimeout as exc:
                # As a lost connection: the master goes (the command with it); the next
                # command logs in afresh.
                self.close()
                why = f"no answer to the command within {exc.seconds:g} s"
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
            with contextlib.suppress(SshTimeout):  # else ControlPersist ends it
                call(self._argv("-O", "exit", self.target.host), None, 30)
        self._started = False  # the next command starts a master again, alone

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
