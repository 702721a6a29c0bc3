"""SSH through paramiko with host keys checked against a known_hosts file (never auto-accepted)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from netroot.errors import Exit, NetrootError
from netroot.sshtarget import SshTarget

if TYPE_CHECKING:
    import paramiko


@dataclass(frozen=True)
class Result:
    rc: int
    stdout: bytes
    stderr: bytes


class Unreachable(NetrootError):
    def __init__(self, target: SshTarget, why: str) -> None:
        super().__init__(
            f"{target.name} ({target.user}@{target.host}:{target.port}) unreachable: {why}",
            "is the board up and in the inventory's known_hosts? (`netroot lab status`)",
            Exit.UNREACHABLE,
        )
        self.target = target


class Session:
    """One SSH connection to one host; commands run with their exit code, not raised."""

    def __init__(self, target: SshTarget, connect_timeout: float = 15.0) -> None:
        self.target = target
        self._timeout = connect_timeout
        self._client: paramiko.SSHClient | None = None

    def _connect(self) -> paramiko.SSHClient:
        import paramiko

        client = paramiko.SSHClient()
        try:
            client.load_host_keys(self.target.known_hosts)
        except FileNotFoundError:
            why = f"known_hosts {self.target.known_hosts} missing"
            raise Unreachable(self.target, why) from None
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
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
            )
        except paramiko.BadHostKeyException:
            raise Unreachable(self.target, "host key does not match known_hosts") from None
        except paramiko.SSHException as exc:
            raise Unreachable(self.target, str(exc) or type(exc).__name__) from None
        except OSError as exc:
            raise Unreachable(self.target, str(exc) or type(exc).__name__) from None
        return client

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

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
