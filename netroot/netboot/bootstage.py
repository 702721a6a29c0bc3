"""Where a diskless board is in its boot, as its NFS server saw it: for `netroot status`.

One read-only request per server to netroot.remote.bootlog, over SSH as netroot's other
helpers on the server go (netroot.adapters.serverssh: its ssh dies with netroot, and a failure
is worded as theirs): the newest line of the server's dnsmasq log about each board (DHCP by
MAC, each TFTP file by address) and whether the board holds a connection to the server's NFS
port now. Servers are asked in parallel; a Ctrl-C ends every ssh at once (each_host).

Not folded into the fleet helper's session, which `status` has open to each remote export
root already: a server whose export root is on this host has no such session, and that
session's requests have no time bound (a silent server must not hang `status`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from netroot.adapters import serverssh as adapter
from netroot.adapters.ssh import resolve
from netroot.adapters.sshproc import SshTimeout, call, each_host
from netroot.bundle import helper_command
from netroot.errors import Exit, NetrootError
from netroot.inventory import Board, Inventory, NfsServer
from netroot.netboot.bootstep import WHAT, BootStep, last_reply, parse_reply, request_for
from netroot.sshtarget import target_for

TIMEOUT = 60  # seconds for one server's answer (it reads a bounded tail of one file)


def ask(server: NfsServer, boards: Sequence[Board]) -> dict[str, BootStep]:
    """One server's answer for its `boards`; NetrootError when it cannot be read."""
    target = resolve(target_for(server.host))
    command = helper_command("netroot.remote.bootlog", [])
    if target.privileged_ok:  # the log is root's (dnsmasq opens it before dropping root)
        command = target.privileged(command)
    request = json.dumps(request_for(server, boards)).encode()
    # Ended by end_all (a Ctrl-C) or when it outlives TIMEOUT, and by the kernel if netroot dies.
    argv = [*adapter.ssh_argv(target), target.host, command]
    try:
        rc, out, err = call(argv, request, TIMEOUT, dies_with_netroot=True)
    except SshTimeout as exc:
        raise NetrootError(
            f"{server.name}: {WHAT}: no answer in {exc.seconds:g}s", code=Exit.UNREACHABLE
        ) from None
    reply = last_reply(out.decode(errors="replace"))
    if reply is None:
        raise adapter.ssh_failure(target, WHAT, rc, err.decode(errors="replace"))
    return parse_reply(server.name, reply)


def _why(exc: Exception) -> str:
    """A failure as one line, its hint after it: status prints it under the table."""
    if not isinstance(exc, NetrootError):
        return str(exc)
    return f"{exc.message} ({exc.hint})" if exc.hint else exc.message


def boot_steps(inventory: Inventory, boards: Sequence[Board]) -> dict[str, BootStep | str]:
    """Each diskless board of `boards` -> its step, or why its server could not tell."""
    diskless = [b for b in boards if b.mode.served_over_tftp and b.mac]
    by_server: dict[str, list[Board]] = {}
    for board in diskless:
        by_server.setdefault(board.server, []).append(board)
    if not by_server:
        return {}

    def one(name: str) -> dict[str, BootStep | str]:
        try:
            return dict(ask(inventory.servers[name], by_server[name]))
        except (NetrootError, OSError, KeyError) as exc:
            return {b.name: _why(exc) for b in by_server[name]}

    found: dict[str, BootStep | str] = {}
    for part in each_host(one, sorted(by_server), 8):
        found.update(part)
    return found
