"""A diskless board's boot step as its NFS server saw it (pure): the request netroot.remote.bootlog
reads on the server, its answer parsed, and the words `netroot status` prints
(netroot.netboot.bootstage asks the servers).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netroot.errors import NetrootError
from netroot.inventory import Board, NfsServer

# The server role's default (netroot_nfs_server_dnsmasq_log); an inventory may set its own.
DEFAULT_LOG = "/var/log/netroot-dnsmasq.log"
WHAT = "reading its boot log"  # what a failure names (netroot.adapters.serverssh.ssh_failure)

_WORDS = {
    "tftp-sent": "tftp: sent",
    "tftp-missing": "tftp: not found:",
    "tftp-failed": "tftp: failed sending",
    "tftp-error": "tftp:",
    "PXE": "dhcp: proxy offer (PXE) to",
}


@dataclass(frozen=True)
class BootStep:
    """A board's newest boot step in its server's records."""

    event: str  # DHCPOFFER, DHCPACK, PXE, ..., tftp-sent, tftp-missing, ...; "" none in the log
    detail: str  # the address handed out, or the TFTP file (relative to the TFTP root)
    time: float | None
    nfs: bool  # it holds a connection to the server's NFS port now
    nfs_time: float | None = None  # when data last came in on it (None: the server can't say)

    @property
    def mounted_since(self) -> bool:
        """NFS traffic after the last DHCP/TFTP step: this boot mounted its root. (dnsmasq's
        stamps are whole seconds: traffic within the step's second is not counted as after.)"""
        if not self.nfs or self.nfs_time is None:
            return False
        return self.time is None or self.nfs_time >= self.time + 1

    @property
    def stage(self) -> str:
        """The newest stage's name: "nfs" when the root was mounted after the step, else the
        step's event."""
        return "nfs" if self.mounted_since else self.event

    @property
    def since(self) -> float | None:
        return self.nfs_time if self.mounted_since else self.time

    def describe(self) -> str:
        """One line: "tftp: sent nb-01/zImage at 17:42:03, no NFS connection now"."""
        if self.event:
            words = _WORDS.get(self.event) or f"dhcp: {self.event.removeprefix('DHCP').lower()}"
            step = f"{words} {self.detail}".strip() + f" at {_clock(self.time)}"
        else:
            step = "no DHCP or TFTP for it in the server's dnsmasq log"
        if self.mounted_since:
            return f"nfs: root mounted, traffic at {_clock(self.nfs_time)} (after {step})"
        if not self.nfs:
            return f"{step}, no NFS connection now"
        if self.nfs_time is None:  # no `ss` on the server: the connection's age is unknown
            return f"{step}, an NFS connection open (maybe an earlier boot's)"
        return (
            f"{step}, no NFS traffic since (its open connection is an earlier boot's, last "
            f"traffic at {_clock(self.nfs_time)})"
        )


def _clock(when: float | None) -> str:
    if when is None:
        return "?"
    fmt = "%H:%M:%S" if time.time() - when < 86400 else "%Y-%m-%d %H:%M:%S"
    return time.strftime(fmt, time.localtime(when))


def request_for(server: NfsServer, boards: Sequence[Board]) -> dict[str, object]:
    """The helper's request for `boards` (served by `server`)."""
    log = server.host.vars.get("netroot_nfs_server_dnsmasq_log", DEFAULT_LOG)
    return {
        "log": str(log),
        "tftp_root": server.tftp_root,
        "boards": [{"name": b.name, "mac": b.mac or "", "address": b.address} for b in boards],
    }


def last_reply(text: str) -> dict[str, Any] | None:
    """The helper's reply: its output's last line, when that is a JSON object (else None: it
    gave none, and ssh's or sudo's words on stderr say why)."""
    lines = text.strip().splitlines()
    try:
        reply = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None
    return reply if isinstance(reply, dict) else None


def parse_reply(server: str, reply: Mapping[str, Any]) -> dict[str, BootStep]:
    """The helper's reply as steps; NetrootError naming the server when it has none."""
    if not reply.get("ok"):
        raise NetrootError(f"{server}: {WHAT}: {reply.get('error')}")
    if reply.get("log_exists") is False:  # no dnsmasq of netroot's has run there yet
        raise NetrootError(f"{server}: no dnsmasq log there yet (provision sets dnsmasq up)")
    return {
        name: BootStep(str(s.get("event", "")), str(s.get("detail", "")), s.get("time"),
                       bool(s.get("nfs")), s.get("nfs_time"))
        for name, s in reply["boards"].items()
    }  # fmt: skip
