"""Where and how to reach a host over SSH, derived from its inventory vars (pure).

Ansible's connection vars decide it, as for Ansible itself: `ansible_user` logs in, and with
`ansible_become` (method `sudo`, the only one netroot speaks) commands that need privileges run
as `ansible_become_user` (default root) through `sudo -n`: never a password prompt, so nothing
can hang waiting for one. A non-root user without become is refused before anything runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netroot.errors import UsageError
from netroot.inventory import Host

BECOME_METHODS = ("sudo",)
# As playbooks/ansible.cfg (timeout, [ssh_connection] retries): netroot's own SSH sessions
# wait and retry like Ansible does, and the inventory's ansible_ssh_timeout and
# ansible_ssh_retries change both.
SSH_TIMEOUT_S = 30.0
SSH_RETRIES = 2
_TRUE = {"true", "yes", "on", "1", "y", "t"}
_FALSE = {"false", "no", "off", "0", "n", "f", ""}


@dataclass(frozen=True)
class SshTarget:
    name: str
    host: str
    port: int
    user: str
    key_file: str | None
    known_hosts: str  # host keys are checked against this file; unknown keys are refused
    become: bool = False
    become_user: str = "root"
    timeout: float = SSH_TIMEOUT_S  # seconds to connect and for the server to answer
    retries: int = SSH_RETRIES  # connections tried again after a timeout

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


def known_hosts_for(host: Host) -> str:
    """`netroot_known_hosts`, else UserKnownHostsFile in ansible_ssh_common_args, else ~/.ssh."""
    explicit = host.vars.get("netroot_known_hosts")
    if explicit:
        return str(explicit)
    common = str(host.vars.get("ansible_ssh_common_args", ""))
    for word in shlex.split(common):
        m = re.match(r"(?:-o)?UserKnownHostsFile=(.+)", word, re.IGNORECASE)
        if m:
            return m.group(1)
    return str(Path.home() / ".ssh" / "known_hosts")


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


def target_for(host: Host) -> SshTarget:
    """The host's SSH target, become included; a become method other than sudo is refused."""
    become = as_bool(host.vars.get("ansible_become", False), host.name, "ansible_become")
    method = str(host.vars.get("ansible_become_method", "sudo"))
    if become and method not in BECOME_METHODS:
        raise UsageError(
            f"{host.name}: ansible_become_method {method!r} is not supported",
            "netroot becomes root with sudo -n: set ansible_become_method: sudo",
        )
    return SshTarget(
        name=host.name,
        host=host.ssh_host,
        port=host.ssh_port,
        user=host.ssh_user,
        key_file=host.ssh_key,
        known_hosts=known_hosts_for(host),
        become=become,
        become_user=str(host.vars.get("ansible_become_user", "root")),
        timeout=_number(host, "ansible_ssh_timeout", SSH_TIMEOUT_S, 1),
        retries=int(_number(host, "ansible_ssh_retries", SSH_RETRIES, 0)),
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


def unreachable_meaning(said: str, slow: str = SLOW_ANSWER) -> str | None:
    """What an SSH failure's message means and what to do about it (pure), or None when its own
    words are all there is to say (a wrong host key, a refused login). `slow`: what a timeout
    means where the inventory's SSH settings do not apply."""
    if any(words in said for words in _SLOW_WORDS):
        return slow
    if any(words in said for words in _GONE_WORDS):
        return (
            "nothing answers at that address: the host is powered off, unplugged or not on this "
            "network; check its power and cabling, and its ansible_host"
        )
    if "Connection refused" in said:
        return "the host is up but its SSH port is closed: is sshd running?"
    return None


def with_meaning(said: str, meaning: str | None = None, slow: str = SLOW_ANSWER) -> str:
    """`said` (SSH's words, kept as they are) followed by what they mean in parentheses: `meaning`
    when the caller knows it, else the table's (pure)."""
    meaning = meaning or unreachable_meaning(said, slow)
    return f"{said} ({meaning})" if meaning else said
