"""The list of command modules. A command appears in --help only once it is built."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    # One line per built command module: `from netroot.cli import X_cmd` + `X_cmd.register(app)`.
    pass
