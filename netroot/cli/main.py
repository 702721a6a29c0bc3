"""Entry point: the root command, registration, and the one place errors become exit codes."""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import typer

from netroot import __version__
from netroot.cli.context import NOTHING_COMMITTED, NetrootTyper, get
from netroot.console import Output
from netroot.errors import EXIT_CODES_HELP, Exit, NetrootError

app = NetrootTyper(
    name="netroot",
    help="Run a lab of Raspberry Pi boards from one container image over NFS.\n\n"
    "-i/--inventory, -v/--verbose and -q/--quiet go before or after the command's name. "
    "`netroot COMMAND --help` shows a command's options and examples.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=True,
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
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    get(ctx).configure()  # the global options themselves: netroot.cli.context


def _register() -> None:
    # Each command module adds its commands; only built commands are registered.
    from netroot.cli import commands

    commands.register(app)


def _usage_error(exc: Any) -> NoReturn:
    """A refused command line in one line (what was wrong) and a hint (where the help is)."""
    from typer._click.exceptions import NoArgsIsHelpError

    if isinstance(exc, NoArgsIsHelpError):
        exc.show()  # bare `netroot` or `netroot lab`: the help itself
    else:
        ctx = getattr(exc, "ctx", None)
        hint = f"see `{ctx.command_path} --help`" if ctx is not None else ""
        Output().error(exc.format_message(), hint)
    sys.exit(exc.exit_code)


def main() -> None:
    """Run the CLI; every way out of a command ends here, with its exit code.

    NetrootError becomes one red line, a hint, and its code; a refused command line (unknown
    option, a value out of its range or choices) one line and 2, before any work. Ctrl-C exits
    130 with one line saying what was committed: the command's own words
    (netroot.cli.context.NetrootCommand), or, when it came outside a command, that nothing was.
    """
    import typer._click.exceptions as click_exc

    try:
        _register()
        code = app(prog_name="netroot", standalone_mode=False)  # `python -m netroot` too
    except NetrootError as exc:
        label = "" if exc.code == Exit.INTERRUPTED else "error:"
        Output().error(exc.message, exc.hint, label=label)
        if exc.code == Exit.INTERRUPTED:
            _exit_now(exc.code)
        sys.exit(int(exc.code))
    except click_exc.ClickException as exc:
        _usage_error(exc)
    except typer.Abort:  # end of input at a prompt
        Output().error("aborted: nothing written")
        sys.exit(int(Exit.FAILED))
    except KeyboardInterrupt:
        code = int(Exit.INTERRUPTED)
    if code == Exit.INTERRUPTED:  # typer's own, for a Ctrl-C outside a command
        Output().error(NOTHING_COMMITTED, label="")
        _exit_now(code)
    sys.exit(code if isinstance(code, int) else 0)


def _exit_now(code: int) -> NoReturn:
    """Exit after Ctrl-C without joining worker threads still blocked on a silent host (an SSH
    probe, a connect): the command's own cleanup (locks, state, Ansible's cancel) has run as
    the interrupt unwound it; only the threads' waits are cut short."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
