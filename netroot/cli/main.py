"""Entry point: global options, command registration, and the one place errors become exit codes."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import typer

from netroot import __version__
from netroot.cli.context import AppContext
from netroot.console import Output
from netroot.errors import EXIT_CODES_HELP, NetrootError

app = typer.Typer(
    name="netroot",
    help="Run a lab of Raspberry Pi boards from one container image over NFS.\n\n"
    + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"netroot {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    inventory: Path | None = typer.Option(
        None,
        "-i",
        "--inventory",
        envvar="NETROOT_INVENTORY",
        help="Ansible inventory: a file (YAML, INI) or a directory (default: the lab's).",
    ),
    verbose: int = typer.Option(0, "-v", "--verbose", count=True, help="More detail on stderr."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="Only errors on stderr."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    level = -1 if quiet else verbose
    ctx.obj = AppContext(inventory_path=inventory, out=Output(verbosity=level))
    logging.basicConfig(
        level=logging.DEBUG if verbose >= 2 else logging.WARNING,
        format="%(name)s: %(message)s",
        stream=sys.stderr,
    )


def _register() -> None:
    # Each command module adds its commands; only built commands are registered.
    from netroot.cli import commands

    commands.register(app)


def main() -> None:
    """Run the CLI; NetrootError becomes one red line, a hint, and its exit code.

    Usage errors exit 2 and Ctrl-C exits 130 (typer's standalone mode does both).
    """
    _register()
    try:
        app()
    except NetrootError as exc:
        Output().error(exc.message, exc.hint)
        sys.exit(int(exc.code))
