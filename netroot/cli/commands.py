"""The list of command modules. A command appears in --help only once it is built."""

from __future__ import annotations

import importlib

import typer

# One line per built command module (netroot/cli/<name>.py with a `register(app)`).
MODULES = [
    "export_cmd",  # export
    "versions_cmd",  # versions, verify, prune
    "provision_cmd",
    "smoke_cmd",
    "rollout_cmd",  # rollout, rollback
    "status_cmd",
    "watch_cmd",  # events, metrics
    "lab_cmd",
]


def register(app: typer.Typer) -> None:
    for name in MODULES:
        importlib.import_module(f"netroot.cli.{name}").register(app)
