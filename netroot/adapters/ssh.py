"""SSH through paramiko with host keys checked against a known_hosts file (never auto-accepted)."""

from __future__ import annotations

import socket
import time
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netroot.errors import Exit, NetrootError
from netroot.sshtarget import SLOW_ANSWER, SshTarget, with_meaning

if TYPE_CHECKING:
    import paramiko


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
        where = f"{target.name} ({target.user}@{target.host}:{target.port})"
        said = with_meaning(why, meaning)
        hint = "is the board up and in the inventory's known_hosts? (`netroot lab status`)"
        super().__init__(target, f"{where} unreachable: {said}", hint, Exit.UNREACHABLE)


class _SlowAnswer(Exception):
    """The host did not answer in time: busy, maybe, rather than gone."""


class BecomeRefused(TargetError):
    """The login user cannot get root without a password: one line naming host and remedy."""

    def __init__(self, target: SshTarget, why: str) -> None:
        super().__init__(target, f"{target.name}: {why}; nothing was changed", "", Exit.USAGE)


def become_problem(target: SshTarget, sudo_rc: int | None, sudo_stderr: str) -> str | None:
    """Why `target` cannot run netroot's privileged commands, or None (pure).

    sudo_rc/sudo_stderr: the result of `sudo -n true` on the host (None when not probed).
    """
    who = f"{target.user}@{target.host}"
    if not target.privileged_ok:
        if not target.become:
            return (
                f"{who} is not root and ansible_become is off: set ansible_become: true "
                f"(with passwordless sudo for {target.user}) or ansible_user: root"
            )
        return (
            f"ansible_become_user is {target.become_user!r}, but netroot needs root on the "
            "host: remove ansible_become_user or set it to root"
        )
    if sudo_rc is None or sudo_rc == 0:
        return None
    said = (sudo_stderr.strip().splitlines() or [f"exit {sudo_rc}"])[-1]
    return (
        f"{who} cannot sudo without a password ({said}): give {target.user} passwordless "
        f"sudo (a line '{target.user} ALL=(ALL) NOPASSWD: ALL' in /etc/sudoers.d/) or use an "
        "ansible_user that has it"
    )


def sudo_refused(target: SshTarget, rc: int, stderr: str) -> str | None:
    """Why sudo refused a privileged command that exited `rc` (pure); None when the login is
    root, or sudo ran the command (whatever the command itself then did).

    sudo's own refusals are its messages ("sudo: a password is required") or a missing sudo.
    """
    if not target.sudo or rc == 0:
        return None
    first = (stderr.strip().splitlines() or [""])[0]
    if first.startswith("sudo:") or (rc == 127 and "sudo" in first):
        return become_problem(target, rc, stderr)
    return None


def check_privileges(targets: Sequence[SshTarget], proven: Collection[str] = ()) -> None:
    """Raise BecomeRefused for the first host whose user cannot become root without a password.

    One `sudo -n true` per host that uses sudo, all at once; hosts reached as root need no
    round trip, nor do the `proven` ones (names of hosts where a command just ran through
    `sudo -n`). Unreachable hosts are left to the operation itself (it reports them).
    """

    def probe(target: SshTarget) -> str | None:
        if not target.sudo:
            return become_problem(target, None, "")
        if target.name in proven:
            return become_problem(target, 0, "")
        try:
            with Session(target) as session:
                res = session.run("sudo -n true", timeout=60)
        except Unreachable:
            return None
        return become_problem(target, res.rc, res.stderr.decode(errors="replace"))

    if not targets:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(targets))) as pool:
        problems = list(pool.map(probe, targets))
    for target, problem in zip(targets, problems, strict=True):
        if problem:
            raise BecomeRefused(target, problem)


class Session:
    """One SSH connection to one host; commands run with their exit code, not raised."""

    def __init__(self, target: SshTarget, connect_timeout: float | None = None) -> None:
        self.target = target
        self._timeout = connect_timeout if connect_timeout is not None else target.timeout
        self._client: paramiko.SSHClient | None = None

    def _connect(self) -> paramiko.SSHClient:
        """Connect, trying again (after 0 s, 1 s, 3 s...) while the host is only slow to answer.

        A busy board (booting, emulated on a loaded machine) may miss a timeout; a wrong host
        key, a refused login or a refused connection is an answer, and is never retried.
        """
        for attempt in range(self.target.retries + 1):
            try:
                return self._connect_once()
            except _SlowAnswer as slow:
                if attempt == self.target.retries:
                    tries = f", {attempt + 1} tries" if attempt else ""
                    raise Unreachable(self.target, f"{slow}{tries}", SLOW_ANSWER) from None
                time.sleep(min(2**attempt - 1, 30))
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _connect_once(self) -> paramiko.SSHClient:
        import paramiko

        client = paramiko.SSHClient()
        try:
            client.load_host_keys(self.target.known_hosts)
        except FileNotFoundError:
            why = f"known_hosts {self.target.known_hosts} missing"
            meaning = (
                "host keys are checked, never accepted unseen: add the hosts' keys to it "
                "(ssh-keyscan, checked against the hosts), or name another file with "
                "netroot_known_hosts in the inventory"
            )
            raise Unreachable(self.target, why, meaning) from None
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        sock = self._ssh_socket()
        try:
            client.connect(
                self.target.host,
                port=self.target.port,
                username=self.target.user,
                key_filename=self.target.key_file,
                timeout=self._timeout,
                banner_timeout=self._timeout,
                auth_timeout=self._timeout,
                allow_agent=False,
                look_for_keys=self.target.key_file is None,
                sock=sock,
            )
        except paramiko.BadHostKeyException:
            raise Unreachable(self.target, "host key does not match known_hosts") from None
        except (paramiko.SSHException, OSError) as exc:
            client.close()
            raise Unreachable(self.target, str(exc) or type(exc).__name__) from None
        return client

    def _ssh_socket(self) -> socket.socket:
        """A connection whose server has started to speak SSH (its banner is left unread).

        Waiting for the banner here, rather than in paramiko (which says "Error reading SSH
        protocol banner" both for a host that hung up and one that said nothing in time), tells
        a busy host from one that refuses.
        """
        address = (self.target.host, self.target.port)
        try:
            sock = socket.create_connection(address, timeout=self._timeout)
        except TimeoutError:
            raise _SlowAnswer(f"no TCP answer within {self._timeout:g} s") from None
        except OSError as exc:
            raise Unreachable(self.target, str(exc) or type(exc).__name__) from None
        try:
            first = sock.recv(4, socket.MSG_PEEK)
        except TimeoutError:
            sock.close()
            raise _SlowAnswer(f"no SSH answer within {self._timeout:g} s") from None
        except OSError as exc:
            sock.close()
            raise Unreachable(self.target, str(exc) or type(exc).__name__) from None
        if not first:
            sock.close()
            raise Unreachable(self.target, "the host closed the connection before SSH began")
        return sock

    @property
    def client(self) -> paramiko.SSHClient:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def run(self, command: str, stdin: bytes | None = None, timeout: float | None = None) -> Result:
        """Run a shell command; returns rc/stdout/stderr. Connection loss raises Unreachable."""
        import paramiko

        try:
            transport = self.client.get_transport()
            if transport is None or not transport.is_active():
                self.close()
                transport = self.client.get_transport()
            assert transport is not None
            chan = transport.open_session(timeout=self._timeout)
            chan.settimeout(timeout)
            chan.exec_command(command)
            if stdin is not None:
                chan.sendall(stdin)
            chan.shutdown_write()
            out = chan.makefile("rb").read()
            err = chan.makefile_stderr("rb").read()
            rc = chan.recv_exit_status()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self.close()
            raise Unreachable(self.target, f"connection lost: {exc}") from None
        return Result(rc, out, err)

    def run_privileged(
        self, command: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> Result:
        """Run `command` as root: directly when logged in as root, else through `sudo -n`."""
        return self.run(self.target.privileged(command), stdin=stdin, timeout=timeout)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
