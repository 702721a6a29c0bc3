"""Where a diskless board is in its boot, as its NFS server saw it: for `netroot status`.

One read-only request per server, over SSH as netroot's other helpers go
(netroot.adapters.serverssh), to netroot.remote.bootlog: the newest line of the server's
dnsmasq log about each board (DHCP by MAC, each TFTP file by address) and whether the board
holds a connection to the server's NFS port now. Servers are asked in parallel.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from netroot.adapters import serverssh as adapter
from netroot.adapters.ssh import resolve
from netroot.bundle import helper_command
from netroot.errors import NetrootError
from netroot.inventory import Board, Inventory, NfsServer
from netroot.netboot.bootstep import BootStep, parse_reply, request_for
from netroot.sshtarget import target_for

TIMEOUT = 60  # seconds for one server's answer (it reads a bounded tail of one file)


def ask(server: NfsServer, boards: Sequence[Board]) -> dict[str, BootStep]:
    """One server's answer for its `boards`; NetrootError when it cannot be read."""
    target = resolve(target_for(server.host))
    command = helper_command("netroot.remote.bootlog", [])
    if target.privileged_ok:  # the log is root's (dnsmasq opens it before dropping root)
        command = target.privileged(command)
    try:
        proc = subprocess.run(
            [*adapter.ssh_argv(target), target.host, command],
            input=json.dumps(request_for(server, boards)),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NetrootError(
            f"{server.name}: reading its boot log: no answer in {TIMEOUT}s"
        ) from None
    return parse_reply(server.name, proc.stdout, proc.stderr)


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
            why = exc.message if isinstance(exc, NetrootError) else str(exc)
            return {b.name: why for b in by_server[name]}

    with ThreadPoolExecutor(max_workers=min(8, len(by_server))) as pool:
        found: dict[str, BootStep | str] = {}
        for part in pool.map(one, sorted(by_server)):
            found.update(part)
    return found
