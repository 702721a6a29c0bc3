"""Where and how to reach a host over SSH, derived from its inventory vars (pure).

Ansible's connection vars decide it, as for Ansible itself: the address, `ansible_user` and
`ansible_port` (unset: the user's ~/.ssh/config, else OpenSSH's defaults), the key, the common
and extra args. netroot's own sessions run the same OpenSSH client with the argv Ansible's ssh
connection plugin builds from those vars (`ssh_argv`), so ~/.ssh/config (ProxyJump,
IdentityFile, per-host options) and the ssh-agent serve status, smoke, the preflight and the
export exactly as they serve `provision`. With `ansible_become` (method `sudo`, the only one
netroot speaks) commands that need privileges run as `ansible_become_user` (default root)
through `sudo -n`: never a password prompt, so nothing can hang waiting for one. A non-root
user without become is refused before anything runs.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass, replace
from typing import Any

from netroot.errors import UsageError
from netroot.inventory import Host

BECOME_METHODS = ("sudo",)
# As playbooks/ansible.cfg (timeout, [ssh_connection] retries): netroot's own SSH sessions
# wait and retry like Ansible does, and the inventory's ansible_ssh_timeout and
# ansible_ssh_retries change both.
SSH_TIMEOUT_S = 30.0
SSH_RETRIES = 2
# playbooks/ansible.cfg's [ssh_connection] ssh_args, which Ansible puts first on its ssh command
# line (compression, multiplexing, keepalives); the inventory's ansible_ssh_args replaces them,
# as it does for Ansible. A unit test keeps the two equal.
ANSIBLE_SSH_ARGS = (
    "-C -o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=5 "
    "-o ServerAliveCountMax=4"
)
# How long a multiplexing master netroot started outlives its last command: a netroot killed
# before it could close its sessions leaves no ssh behind for longer than this.
CONTROL_PERSIST = "60s"
_TRUE = {"true", "yes", "on", "1", "y", "t"}
_FALSE = {"false", "no", "off", "0", "n", "f", ""}


@dataclass(frozen=True)
class SshTarget:
    name: str
    host: str  # the address ssh is given (ansible_host, else the inventory name)
    port: int | None  # None: as ~/.ssh/config says, else 22
    user: str | None  # None: as ~/.ssh/config says, else the local user (as for Ansible)
    key_file: str | None
    # netroot_known_hosts: host keys are checked against this file (else ssh's own, which the
    # common args or ~/.ssh/config may name); an unknown or changed key is always refused.
    known_hosts: str | None
    become: bool = False
    become_user: str = "root"
    timeout: float = SSH_TIMEOUT_S  # seconds to connect and for the server to answer
    retries: int = SSH_RETRIES  # connections tried again after a timeout
    ssh_args: tuple[str, ...] = tuple(shlex.split(ANSIBLE_SSH_ARGS))
    common_args: tuple[str, ...] = ()  # ansible_ssh_common_args
    extra_args: tuple[str, ...] = ()  # ansible_ssh_extra_args
    executable: str = "ssh"  # ansible_ssh_executable
    # The key exchanges netroot asks for where neither ~/.ssh/config nor the inventory chose any
    # (fast_kex, from `ssh -G`); None: ssh's own choice.
    kex: str | None = None

    @property
    def where(self) -> str:
        """user@host:port, each part only when known (for messages)."""
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{user}{self.host}{port}"

    @property
    def sudo(self) -> bool:
        """Privileged commands go through sudo (become asked, and to another user)."""
        return self.become and self.user != self.become_user

    @property
    def privileged_ok(self) -> bool:
        """Commands can get root: logged in as root, or becoming root."""
        return self.user == "root" if not self.become else self.become_user == "root"

    def privileged(self, command: str) -> str:
        """The shell command line that runs `command` (a shell string) with become applied.

        `sudo -n` fails at once where a password would be needed (exit 1, "a password is
        required"), which the preflight turns into one line; `-H` gives root's HOME.
        """
        if not self.sudo:
            return command
        user = shlex.quote(self.become_user)
        return f"sudo -n -H -u {user} -- /bin/sh -c {shlex.quote(command)}"


def ssh_argv(target: SshTarget, control: str | None = None) -> list[str]:
    """The ssh command line for `target`, without destination and command (pure).

    netroot's own rules come first: OpenSSH keeps the first value it reads for each option, so
    nothing in the inventory or ~/.ssh/config can undo them: host keys checked (an unknown or
    changed key refused), never a prompt (BatchMode), only errors on stderr (a banner or warning
    there would read as the command's), and the multiplexing netroot manages (`control`: the
    session's socket; None: no multiplexing, no compression, for bulk transfers). Then what
    Ansible's ssh connection plugin passes for the same inventory, in its order
    (ansible/plugins/connection/ssh.py `_build_command`).
    """
    first = ["StrictHostKeyChecking=yes", "BatchMode=yes", "LogLevel=ERROR"]
    if target.known_hosts:
        first.append(f'UserKnownHostsFile="{target.known_hosts}"')
    ssh_args = target.ssh_args
    if control is None:
        # One process, one session: the export's rsync and helpers, which carry whole trees.
        # Without ansible.cfg's -C: zlib on the control host's CPU made rsync of 150 MB over
        # a veth 3.7x slower (median 8.9 s vs 2.4 s, random or shared-library bytes alike).
        first += ["ControlMaster=no", "ControlPath=none", "Compression=no"]
        ssh_args = tuple(arg for arg in ssh_args if arg != "-C")
    else:
        first += [f"ControlPath={control}", "ControlMaster=auto"]
        first.append(f"ControlPersist={CONTROL_PERSIST}")
    if target.kex:
        first.append(f"KexAlgorithms={target.kex}")
    argv = [target.executable]
    for option in first:
        argv += ["-o", option]
    argv += ssh_args
    if target.port is not None:
        argv += ["-o", f"Port={target.port}"]
    if target.key_file:
        argv += ["-o", f'IdentityFile="{os.path.expanduser(target.key_file)}"']
    argv += [
        "-o", "KbdInteractiveAuthentication=no",
        "-o", "PreferredAuthentications=gssapi-with-mic,gssapi-keyex,hostbased,publickey",
        "-o", "PasswordAuthentication=no",
    ]  # fmt: skip
    if target.user:
        argv += ["-o", f'User="{target.user}"']
    argv += ["-o", f"ConnectTimeout={math.ceil(target.timeout)}"]
    # Last, as Ansible: no password is ever typed, BatchMode says so first.
    return [*argv, *target.common_args, *target.extra_args, "-o", "NumberOfPasswordPrompts=1"]


def parse_ssh_config(text: str) -> dict[str, str]:
    """`ssh -G`'s output (one "keyword value" a line) as keyword -> first value (pure)."""
    config: dict[str, str] = {}
    for line in text.splitlines():
        keyword, _, value = line.strip().partition(" ")
        if keyword:
            config.setdefault(keyword.lower(), value)
    return config


def with_config(
    target: SshTarget, config: dict[str, str], default_kex: str | None = None
) -> SshTarget:
    """`target` with the user and port `ssh -G` resolved where the inventory left them unset,
    and the fast key exchanges first where nothing chose them (`fast_kex`; `default_kex`: the
    client's own list, `ssh -F /dev/null -G`'s)."""
    user = target.user or config.get("user") or None
    port = target.port
    if port is None and config.get("port", "").isdigit():
        port = int(config["port"])
    kex = fast_kex(config.get("kexalgorithms", ""), default_kex or "")
    return replace(target, user=user, port=port, kex=kex)


# OpenSSH 9.0-9.9's first key exchange, a post-quantum hybrid, costs its client ~65 ms of CPU a
# connection (its keypair: measured with OpenSSH 9.2, against 10 ms for a whole login with
# curve25519), 6.5 s of the controller's CPU for a `status` of 100 boards. ML-KEM's hybrid
# (OpenSSH >= 9.9) is as post-quantum and costs next to nothing, so it stays where it is.
SLOW_KEX = ("sntrup761x25519-sha512@openssh.com", "sntrup761x25519-sha512")
FAST_KEX = ("mlkem768x25519-sha256", "curve25519-sha256", "curve25519-sha256@libssh.org")


def fast_kex(effective: str, default: str) -> str | None:
    """The KexAlgorithms netroot's own sessions ask for (pure): the client's default list with
    the slow post-quantum hybrid moved behind the fast exchanges the list holds; None (ssh's own
    choice) where the list is not the client's default (~/.ssh/config, the system's config or
    the inventory's ssh args chose one: theirs is kept) or holds nothing to move.

    effective: `ssh -G HOST`'s kexalgorithms for the host, with netroot's argv; default: the
    same with no config at all (`ssh -F /dev/null -G`).
    """
    names = effective.split(",")
    if not effective or effective != default:
        return None
    slow = [n for n in names if n in SLOW_KEX]
    fast = [i for i, n in enumerate(names) if n in FAST_KEX]
    if not slow or not fast or names.index(slow[0]) > max(fast):
        return None
    rest = [n for n in names if n not in SLOW_KEX]
    after = rest.index(names[max(fast)]) + 1
    return ",".join([*rest[:after], *slow, *rest[after:]])


def as_bool(value: Any, host: str, field: str) -> bool:
    """An Ansible boolean (true/yes/on/1, any case), else a usage error naming host and field."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise UsageError(f"{host}: {field}: expected a boolean, got {value!r}")


def _var(host: Host, *names: str) -> Any:
    """The first of Ansible's names for one connection var that the host sets (else None)."""
    for name in names:
        value = host.vars.get(name)
        if value is not None and value != "":
            return value
    return None


def _number(host: Host, field: str, default: float, least: float) -> float:
    """An inventory number (Ansible's vars are often strings), else a usage error."""
    value = host.vars.get(field, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = least - 1
    if isinstance(value, bool) or number < least:
        raise UsageError(f"{host.name}: {field}: expected a number >= {least:g}, got {value!r}")
    return number


def _port(host: Host, value: Any) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit() or not 0 < int(value) < 65536:
        raise UsageError(f"{host.name}: ansible_port: expected a port number, got {value!r}")
    return int(value)


def _args(host: Host, field: str, default: str = "") -> tuple[str, ...]:
    """ssh arguments as Ansible splits them (shlex); a bad quote is a usage error."""
    value = _var(host, field)
    try:
        return tuple(shlex.split(str(default if value is None else value)))
    except ValueError as exc:
        raise UsageError(f"{host.name}: {field}: {exc} in {value!r}") from None


def target_for(host: Host) -> SshTarget:
    """The host's SSH target, become included; a become method other than sudo is refused."""
    become = as_bool(host.vars.get("ansible_become", False), host.name, "ansible_become")
    method = str(host.vars.get("ansible_become_method", "sudo"))
    if become and method not in BECOME_METHODS:
        raise UsageError(
            f"{host.name}: ansible_become_method {method!r} is not supported",
            "netroot becomes root with sudo -n: set ansible_become_method: sudo",
        )
    port = _var(host, "ansible_port", "ansible_ssh_port")
    user = _var(host, "ansible_user", "ansible_ssh_user")
    key = _var(host, "ansible_private_key_file", "ansible_ssh_private_key_file")
    known_hosts = _var(host, "netroot_known_hosts")
    return SshTarget(
        name=host.name,
        host=str(_var(host, "ansible_host", "ansible_ssh_host") or host.name),
        port=None if port is None else _port(host, port),
        user=None if user is None else str(user),
        key_file=None if key is None else str(key),
        known_hosts=None if known_hosts is None else str(known_hosts),
        become=become,
        become_user=str(host.vars.get("ansible_become_user", "root")),
        timeout=_number(host, "ansible_ssh_timeout", SSH_TIMEOUT_S, 1),
        retries=int(_number(host, "ansible_ssh_retries", SSH_RETRIES, 0)),
        ssh_args=_args(host, "ansible_ssh_args", ANSIBLE_SSH_ARGS),
        common_args=_args(host, "ansible_ssh_common_args"),
        extra_args=_args(host, "ansible_ssh_extra_args"),
        executable=str(_var(host, "ansible_ssh_executable") or "ssh"),
    )


# What SSH's own words about a connection that failed mean for a host, and what to do: one table
# for Ansible's unreachable messages (provision, rollout), netroot's own sessions (status, smoke)
# and the OpenSSH under an export to a remote server, so all say the same of the same failure.
SSH_KNOBS = (
    f"ansible_ssh_timeout (netroot's default {SSH_TIMEOUT_S:g}) and ansible_ssh_retries "
    f"(default {SSH_RETRIES})"
)
SLOW_ANSWER = (
    "no SSH answer in time: a host that is down, or too busy to answer; "
    f"if it is up, raise {SSH_KNOBS} in the inventory"
)
_SLOW_WORDS = ("Connection timed out during banner exchange", "Connection timed out")
# The address answers nothing at all (no ARP reply, no route): a host that is off.
_GONE_WORDS = ("No route to host", "Host is unreachable", "Network is unreachable")
_UNKNOWN_KEY = re.compile(r"No \S+ host key is known for")
_CHANGED_KEY = re.compile(r"Host key for \S+ has changed|REMOTE HOST IDENTIFICATION HAS CHANGED")


def unreachable_meaning(said: str, slow: str = SLOW_ANSWER) -> str | None:
    """What an SSH failure's message means and what to do about it (pure), or None when its own
    words are all there is to say (a refused login). `slow`: what a timeout means where the
    inventory's SSH settings do not apply."""
    if any(words in said for words in _SLOW_WORDS):
        return slow
    if any(words in said for words in _GONE_WORDS):
        return (
            "nothing answers at that address: the host is powered off, unplugged or not on this "
            "network; check its power and cabling, and its ansible_host"
        )
    if "Connection refused" in said:
        return "the host is up but its SSH port is closed: is sshd running?"
    if _UNKNOWN_KEY.search(said):
        return (
            "host keys are checked, never accepted unseen: add the host's key to known_hosts "
            "(ssh-keyscan, checked against the host), or name the file with netroot_known_hosts"
        )
    if _CHANGED_KEY.search(said):
        return (
            "the host's key is not the one known_hosts holds (a reinstalled host, or someone in "
            "between): check it, then replace its line (ssh-keygen -R)"
        )
    return None


def with_meaning(said: str, meaning: str | None = None, slow: str = SLOW_ANSWER) -> str:
    """`said` (SSH's words, kept as they are) followed by what they mean in parentheses: `meaning`
    when the caller knows it, else the table's (pure)."""
    meaning = meaning or unreachable_meaning(said, slow)
    return f"{said} ({meaning})" if meaning else said


def ssh_said(stderr: str) -> str:
    """The one line of OpenSSH's stderr that says why it could not connect (pure).

    ssh may say several things: a jump host's failure before "Connection closed by UNKNOWN", a
    changed host key inside a dozen lines of @-banner. The line about the host key wins, then
    ssh's own "ssh: ..." line, then the last one.
    """
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("@")]
    for pattern in (_UNKNOWN_KEY, _CHANGED_KEY):
        for line in lines:
            if pattern.search(line):
                return line
    own = [line for line in lines if line.startswith("ssh: ")]
    return (own or lines or ["ssh failed without a word"])[0 if own else -1]
