"""How a board boots, as one object per board: the only place that knows there are two ways.

A board boots `sd` (its own card, then mounts its version over NFS into a chroot) or `netboot`
(no card: firmware and kernel over TFTP, its root is the version itself). Each mode is a class
here that answers every question the rest of netroot asks about it: which inventory fields it
needs, which board templates the role renders, whether the server must serve TFTP, how a
command runs in the board's version, what the status probe's output means and what drift is.
The inventory picks the mode once per board (`of`); nobody else tests its name.
"""

from __future__ import annotations

from netroot.bootmode.base import BootMode
from netroot.bootmode.netboot import NetBoot
from netroot.bootmode.sd import SdBoot

# Adding a boot mode: one class, one entry here.
MODES: dict[str, BootMode] = {mode.name: mode for mode in (SdBoot(), NetBoot())}
NAMES = tuple(MODES)
DEFAULT = "sd"


def of(name: str) -> BootMode:
    """The mode called `name` (the inventory's netroot_boot); KeyError for an unknown one."""
    return MODES[name]


__all__ = ["DEFAULT", "MODES", "NAMES", "BootMode", "NetBoot", "SdBoot", "of"]
