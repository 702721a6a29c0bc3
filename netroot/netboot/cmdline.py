"""Each netboot board's cmdline.txt, from templates/cmdline.txt.j2 as the board role renders it,
and what each board boots (pure). Reading the version back from /proc/cmdline is the boot
mode's (netroot/bootmode/netboot.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from netroot.bootmode.netboot import CMDLINE_TEMPLATE
from netroot.errors import UsageError
from netroot.inventory import Board
from netroot.remote.tree import BoardBoot
from netroot.templating import BOARD_ROLE, Renderer


def cmdline(renderer: Renderer, board: str, version: str) -> str:
    """The one-line kernel command line of `board` booting `version`."""
    variables = renderer.variables(board, BOARD_ROLE, {"netroot_board_version": version})
    return renderer.render(CMDLINE_TEMPLATE, board, variables).strip()


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
