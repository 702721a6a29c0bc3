"""Where and how to reach a host over SSH, derived from its inventory vars (pure)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from netroot.inventory import Host


@dataclass(frozen=True)
class SshTarget:
    name: str
    host: str
    port: int
    user: str
    key_file: str | None
    known_hosts: str  # host keys are checked against this file; unknown keys are refused


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


def target_for(host: Host) -> SshTarget:
    return SshTarget(
        name=host.name,
        host=host.ssh_host,
        port=host.ssh_port,
        user=host.ssh_user,
        key_file=host.ssh_key,
        known_hosts=known_hosts_for(host),
    )
