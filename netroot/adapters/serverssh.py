"""Run netroot's helpers on the NFS server: ssh, rsync and a JSON-lines session, as root there.

The one place for "run the helper on the server over SSH with become": the export
(netroot.export.serverroot) and a remote fleet root (netroot.fleet.where) both go through it.
SSH as for every other netroot connection: the inventory's user, key, known_hosts checked
strictly (an unknown or changed host key is refused), BatchMode (never a prompt), become by
`sudo -n` (never a password prompt). Every child (ssh, rsync) dies with this process
(sshproc.die_with_netroot): a control host killed stops writing to the server at once, and a
helper session whose ssh dies sees EOF and ends (releasing what it held).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from typing import IO, Any

from netroot import sshtarget
from netroot.adapters.sshproc import die_with_netroot
from netroot.errors import EnvironmentMissing, Exit, NetrootError, UsageError
from netroot.sshtarget import SshTarget, with_meaning

Progress = Callable[[int, int], None]  # (bytes so far, files so far)

# What ssh says when it cannot log in (rsync then exits 12 or 255, depending on timing).
SSH_FAILURES = (
    "Host key verification failed",
    "Permission denied (",
    "Connection refused",
    "Connection timed out",
    "No route to host",
    "Could not resolve hostname",
    "Connection closed by remote host",
)


def ssh_argv(target: SshTarget) -> list[str]:
    """ssh to the server as Ansible would for the same inventory (netroot.sshtarget.ssh_argv):
    host key checked strictly, never a prompt; no multiplexing (each process is one session)."""
    return sshtarget.ssh_argv(target)


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """rsync or a helper session's ssh, dying with netroot (die_with_netroot)."""
    try:
        return subprocess.Popen(argv, preexec_fn=die_with_netroot(), **kwargs)
    except FileNotFoundError:
        raise EnvironmentMissing(
            f"{argv[0]}: not installed on this control host",
            "install openssh-client and rsync (apt-get install openssh-client rsync)",
        ) from None


def ssh_failure(target: SshTarget, what: str, rc: int, stderr: str) -> NetrootError:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    # rsync ends with its own summary ("rsync error: ... (code 255)"): ssh's reason is before.
    own = [line for line in lines if not line.startswith(("rsync error", "rsync: "))]
    last = (own or lines or [f"exit {rc}"])[-1]
    if "password is required" in stderr or "a terminal is required" in stderr:
        return UsageError(
            f"{target.name}: sudo -n asks {target.user} for a password ({what})",
            "give the user passwordless sudo on the server (NOPASSWD), or log in as root",
        )
    if "No space left on device" in stderr:
        return NetrootError(
            f"{target.name}: no space left on the server's export root ({what})",
            "free space there or prune old versions; current is unchanged",
            Exit.ENVIRONMENT,
        )
    if rc == 255 or any(marker in stderr for marker in SSH_FAILURES):
        said = with_meaning(
            sshtarget.ssh_said("\n".join(own or lines)) if lines else last,
            slow="no SSH answer in time: down, or too busy",
        )
        return NetrootError(
            f"{target.name}: ssh {target.where} failed: {said}",
            "check the server's address, key and known_hosts in the inventory",
            Exit.UNREACHABLE,
        )
    if (
        rc == 127
        or "command not found" in stderr
        or "No such file or directory" in last
        or "Unknown option: -P" in stderr  # python3 older than 3.11
    ):
        return EnvironmentMissing(
            f"{target.name}: {what}: {last}",
            "the server needs rsync and python3 >= 3.11 (apt-get install rsync python3)",
        )
    return NetrootError(f"{target.name}: {what} failed: {last}", "current is unchanged")


def remote_dest(target: SshTarget, path: str) -> str:
    """rsync's destination; the user is in ssh's own options (User=), as Ansible gives it."""
    host = f"[{target.host}]" if ":" in target.host else target.host
    return f"{host}:{path}"


def rsync(
    target: SshTarget,
    sources: list[str],
    dest: str,
    extra: list[str],
    what: str,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Run rsync to the server as root there; its --stats numbers."""
    rsync_path = f"sudo -n -u {shlex.quote(target.become_user)} rsync" if target.sudo else "rsync"
    argv = [
        "rsync",
        *extra,
        *(["--info=progress2"] if progress is not None else []),
        "-e",
        shlex.join(ssh_argv(target)),
        f"--rsync-path={rsync_path}",
        *sources,
        remote_dest(target, dest),
    ]
    # stderr to a file: a pipe nobody reads while stdout is followed could fill and block.
    with tempfile.TemporaryFile() as err:
        proc = spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        out = _follow(lambda: os.read(fd, 65536), progress)
        rc = proc.wait()
        err.seek(0)
        if rc != 0:
            raise ssh_failure(target, what, rc, err.read().decode(errors="replace"))
    return parse_stats(out)


def _follow(read: Callable[[], bytes], progress: Progress | None) -> str:
    """rsync's output; its --info=progress2 lines ("1,234  5%  ... (xfr#3, ...)") reported."""
    seen: list[bytes] = []
    pending = b""
    while chunk := read():
        seen.append(chunk)
        if progress is None:
            continue
        *lines, pending = re.split(rb"[\r\n]", pending + chunk)
        for line in reversed(lines):  # the newest complete progress line is enough
            m = re.match(rb"\s*([\d,]+)\s+\d+%", line)
            if m:
                files = re.search(rb"xfr#(\d+)", line)
                progress(int(m.group(1).replace(b",", b"")), int(files.group(1)) if files else 0)
                break
    return b"".join(seen).decode(errors="replace")


def parse_stats(text: str) -> dict[str, int]:
    """rsync --stats lines ("Total bytes sent: 1,234") as {"total bytes sent": 1234}."""
    stats: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z][A-Za-z ()-]*?):\s+([\d,.]+)", line.strip())
        if m:
            number = m.group(2).replace(",", "").split(".")[0]
            if number.isdigit():
                stats[m.group(1).lower()] = int(number)
    return stats


class HelperSession:
    """A helper on the server speaking JSON lines on stdin/stdout; it lives as long as ssh."""

    def __init__(self, target: SshTarget, command: str, what: str) -> None:
        self.target = target
        self.proc = spawn(
            [*ssh_argv(target), target.host, target.privileged(command)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.hello = self.read(what)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def reply_error(self, reply: dict[str, Any], what: str) -> NetrootError:
        """The error a reply without "ok" stands for (sessions refine it)."""
        if reply.get("errno") == 28:
            return ssh_failure(self.target, what, 1, "No space left on device")
        return NetrootError(f"{self.target.name}: {what}: {reply.get('error')}")

    def read(self, what: str) -> dict[str, Any]:
        line = self._pipes()[1].readline()
        if not line:
            rc = self.proc.wait()
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            raise ssh_failure(self.target, what, rc, err)
        reply: dict[str, Any] = json.loads(line)
        if reply.get("ok"):
            return reply
        raise self.reply_error(reply, what)

    def request(
        self, request: dict[str, Any], payload: bytes = b"", what: str = "on the server"
    ) -> dict[str, Any]:
        stdin, _ = self._pipes()
        try:
            stdin.write(json.dumps(request).encode() + b"\n" + payload)
            stdin.flush()
        except BrokenPipeError:
            pass  # the helper died: read() reports why
        return self.read(what)

    def close(self) -> None:
        if self.proc.poll() is None:
            self._pipes()[0].close()  # EOF: the helper exits, releasing what it holds
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
