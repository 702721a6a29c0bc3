"""-i/--inventory, -v/--verbose and -q/--quiet before or after the command's name, everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from netroot.cli.main import _register, app
from tests.unit.cli.clikit import error_lines, inventory, netroot


def _commands() -> list[tuple[str, Any]]:
    _register()
    root = typer.main.get_command(app)
    out: list[tuple[str, Any]] = []

    def walk(path: str, command: Any) -> None:
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(f"{path} {name}".strip(), sub)
        out.append((path, command))

    walk("", root)
    return out


@pytest.mark.parametrize("path,command", _commands(), ids=lambda v: str(v) if v else "netroot")
def test_every_command_takes_the_global_options(path: str, command: Any) -> None:
    opts = {o for p in command.params for o in p.opts}
    assert {"-i", "--inventory", "-v", "--verbose", "-q", "--quiet"} <= opts, path
    if "--json" in opts:  # every command that prints data: the same --tsv
        assert "--tsv" in opts, path


def test_inventory_after_the_command(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yml"
    for args in (("status", "-i", str(missing)), ("-i", str(missing), "status"),
                 ("status", "--inventory", str(missing), "--json")):  # fmt: skip
        done = netroot(*args, home=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert str(missing) in error_lines(done.stderr)[0], (args, done.stderr)
    # Given twice: the one after the command's name wins.
    good = inventory(tmp_path, tmp_path / "root")
    done = netroot("-i", str(missing), "status", "-i", str(good), "--json", home=tmp_path)
    assert done.returncode == 4, done.stderr  # read the good one: its boards are unreachable
    assert '"board": "pi-01"' in done.stdout


def test_quiet_and_verbose_after_the_command(tmp_path: Path) -> None:
    inv = inventory(tmp_path, tmp_path / "root")
    loud = netroot("status", "-i", str(inv), home=tmp_path)
    assert "unreachable" in loud.stderr  # why each board could not be read (info)
    quiet = netroot("status", "-i", str(inv), "-q", home=tmp_path)
    assert quiet.returncode == 4 and quiet.stderr == "", quiet.stderr
    assert netroot("-q", "status", "-i", str(inv), home=tmp_path).stderr == ""
