"""A testinfra backend that runs every command inside a board's netroot chroot over SSH (an sd
board), or on the booted root itself (a netboot board: its root is the version).

Commands run as root: directly when the inventory logs in as root, else through `sudo -n` as
its `ansible_user` with `ansible_become` (netroot/sshtarget.py). Commands go through netroot's
own SSH session (OpenSSH as Ansible runs it: ~/.ssh/config, the agent, jump hosts), host keys
checked (testinfra's own paramiko backend auto-accepts unknown keys, which netroot does not
allow). Use it from plain pytest as
`pytest -p netroot.smoke.plugin --hosts='netroot://pi-01?ansible_inventory=INV' CHECKS...`.
"""

from __future__ import annotations

from typing import Any

from testinfra.backend import base

from netroot import inventory as inventory_mod
from netroot.adapters.ssh import Result, Session
from netroot.inventory import Board
from netroot.sshtarget import target_for


def in_version(board: Board, command: str) -> str:
    """`command` run in the board's version: through the chroot on an sd board, as it is on a
    netboot board (booted from the version, no chroot); its boot mode knows which."""
    return board.mode.in_version(command)


class NetrootBackend(base.BaseBackend):  # type: ignore[misc]
    NAME = "netroot"

    def __init__(self, hostname: str, *args: Any, **kwargs: Any) -> None:
        inv_path = kwargs.pop("ansible_inventory", None)
        super().__init__(hostname, *args, **kwargs)
        from pathlib import Path

        inv = inventory_mod.load(Path(inv_path) if inv_path else None)
        self.board: Board = inv.resolve([hostname])[0]
        self.session = Session(target_for(self.board.host))

    def run(self, command: str, *args: str, **kwargs: Any) -> base.CommandResult:
        cmd = self.get_command(command, *args)
        res = self.session.run_privileged(in_version(self.board, cmd), timeout=120)
        return self.result(res.rc, self.encode(cmd), res.stdout, res.stderr)

    def run_on_board(self, command: str) -> Result:
        """Run a command on the board itself, as root, outside the chroot (mount/identity)."""
        return self.session.run_privileged(command, timeout=120)

    def close(self) -> None:
        """Stop the board's SSH master (the worker that ran its checks is done)."""
        self.session.close()

    def get_hostname(self) -> str:
        return self.board.name

    def get_pytest_id(self) -> str:
        return self.board.name
