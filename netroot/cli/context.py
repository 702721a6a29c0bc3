"""What every command gets: the chosen inventory path and the output streams."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import typer

from netroot.console import Output
from netroot.inventory import Inventory, default_path, load


@dataclass
class AppContext:
    inventory_path: Path | None = None
    out: Output = field(default_factory=Output)
    _inventory: Inventory | None = None

    def inventory(self) -> Inventory:
        """The inventory, loaded and validated once per invocation."""
        if self._inventory is None:
            self._inventory = load(self.inventory_path or default_path())
        return self._inventory


def get(ctx: typer.Context) -> AppContext:
    obj = ctx.find_root().obj
    if not isinstance(obj, AppContext):
        obj = AppContext()
        ctx.find_root().obj = obj
    return obj


# `--json` of the read-only commands that print a table: one declaration (typer reads these
# defaults, never changes them, so commands can share them).
JSON_OPTION: bool = typer.Option(False, "--json", help="JSON on stdout.")
