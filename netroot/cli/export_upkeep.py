"""The export tree's upkeep: what `netroot export SOURCE --repair` does (its help), and the
versions of an export name that prune keeps for the boards."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netroot.inventory import Inventory

REPAIR_HELP = (
    "Put a damaged version of SOURCE (as `netroot verify` found it) back as its manifest "
    "records it, in place: damaged files are rewritten in their own inodes, so boards that "
    "have it mounted keep their mounts and read the good bytes. Moves nothing (`current` "
    "stays); refused when SOURCE no longer gives the version's tree."
)


def protection_of(inv: Inventory | None, name: str) -> dict[str, list[str]]:
    """The versions of NAME a board needs, each with why (none without an inventory)."""
    if inv is None or not inv.servers:
        return {}
    from netroot.fleet.where import open_fleet

    return open_fleet(inv).protection(name)
