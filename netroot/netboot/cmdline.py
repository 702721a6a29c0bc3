"""Each netboot board's cmdline.txt, from templates/cmdline.txt.j2 as the board role renders it,
and the version a netbooted board runs, read back from its /proc/cmdline (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from netroot.errors import UsageError
from netroot.inventory import Board
from netroot.netboot.tree import BoardBoot
from netroot.provision.render import BOARD_ROLE, NETBOOT_TEMPLATE, Renderer

# nfsroot=SERVER:<export root>/<image>/versions/<id>,options: the version is the path's last part.
# The board role reads it with the same pattern (netroot_board_nfsroot_pattern).
NFSROOT_PATTERN = r"nfsroot=[^ ]*/versions/([0-9a-f]+)(?=[,\s]|$)"
NFSROOT_RE = re.compile(NFSROOT_PATTERN)


def booted_version(proc_cmdline: str) -> str | None:
    """The version on a kernel command line (cmdline.txt.j2's nfsroot=), None when there is none."""
    found = NFSROOT_RE.search(proc_cmdline)
    return found.group(1) if found else None


def cmdline(renderer: Renderer, board: str, version: str) -> str:
    """The one-line kernel command line of `board` booting `version`."""
    variables = renderer.variables(board, BOARD_ROLE, {"netroot_board_version": version})
    return renderer.render(NETBOOT_TEMPLATE, board, variables).strip()


def board_boots(
    renderer: Renderer, boards: Sequence[Board], versions: Mapping[str, str]
) -> list[BoardBoot]:
    """What each board boots, given the version each should run (the desired-state rule's)."""
    out = []
    for board in boards:
        if board.serial is None:
            raise UsageError(f"{board.name}: netroot_serial is not set (needed to netboot)")
        if board.name not in versions:
            raise UsageError(f"{board.name}: no version to boot")
        version = versions[board.name]
        out.append(
            BoardBoot(board.name, board.serial, version, cmdline(renderer, board.name, version))
        )
    return out
