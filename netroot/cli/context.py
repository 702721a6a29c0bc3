"""What every command gets: the chosen inventory path and the output streams; and the options
every command takes, declared once.

The global options (-i/--inventory, -v/--verbose, -q/--quiet) are accepted before the command's
name and after it (`netroot -i inv.yml status` and `netroot status -i inv.yml`): they are declared
once (`_global_options`) and each command gets its own copy, which writes into the one
AppContext of the invocation instead of becoming an argument of the command's function. The
commands that print a table (those with --json) get --tsv the same way.
"""

from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from netroot.console import Output

if TYPE_CHECKING:
    from netroot.inventory import Inventory

_F = TypeVar("_F", bound=Callable[..., Any])
NOTHING_COMMITTED = "interrupted: nothing committed"


@dataclass
class AppContext:
    inventory_path: Path | None = None
    out: Output = field(default_factory=Output)
    verbose: int = 0
    quiet: bool = False
    # What an interrupt leaves, said on Ctrl-C; a command that commits as it goes replaces it.
    on_interrupt: Callable[[], str] = lambda: NOTHING_COMMITTED
    _inventory: Inventory | None = None

    def inventory(self) -> Inventory:
        """The inventory, loaded and validated once per invocation."""
        if self._inventory is None:
            from netroot.inventory import default_path, load

            self._inventory = load(self.inventory_path or default_path())
        return self._inventory

    def configure(self) -> None:
        """Apply -v/-q (which may come before and after the command's name) to the outputs."""
        self.out.verbosity = -1 if self.quiet else self.verbose
        root = logging.getLogger()
        if not root.handlers:
            logging.basicConfig(format="%(name)s: %(message)s", stream=sys.stderr)
        root.setLevel(logging.DEBUG if self.verbose >= 2 else logging.WARNING)


def get(ctx: typer.Context) -> AppContext:
    obj = ctx.find_root().obj
    if not isinstance(obj, AppContext):
        obj = AppContext()
        ctx.find_root().obj = obj
    return obj


# `--json` of the read-only commands that print a table: one declaration (typer reads these
# defaults, never changes them, so commands can share them).
JSON_OPTION: bool = typer.Option(False, "--json", help="JSON on stdout.")


class QpuMode(StrEnum):
    """--qpu of smoke and rollout (netroot.qpu.modes.MODES, checked by a test)."""

    AUTO = "auto"
    REQUIRE = "require"
    SKIP = "skip"
    EMULATE = "emulate"


def name_option(value: str | None) -> str | None:
    """--name: an export name, checked as the command line is read."""
    from netroot.errors import UsageError
    from netroot.export.manifest import check_name

    try:
        return None if value is None else check_name(value)
    except UsageError as exc:
        raise typer.BadParameter(f"{exc.message} ({exc.hint})") from None


def version_option(value: str | None) -> str | None:
    """A version id option (--to), checked as the command line is read."""
    from netroot.export.manifest import VERSION_RE

    if value is not None and not VERSION_RE.match(value):
        raise typer.BadParameter(f"{value!r}: a version id is 12 to 64 lowercase hex digits")
    return value


def count_option(value: str, option: str) -> str:
    """An `N or P%` option checked as the command line is read (exit 2 before any work)."""
    from netroot.errors import UsageError
    from netroot.rollout.plan import Count

    try:
        Count.parse(value, option)
    except UsageError as exc:
        raise typer.BadParameter(exc.message.removeprefix(f"{option} ")) from None
    return value


GLOBAL_PANEL = "Global options (before or after the command)"


def epilog(examples: list[tuple[str, str]], exits: str) -> str:
    """A command's --help epilog: its examples, one a line (with what each does), then its
    exit codes (one paragraph; the table is `netroot --help`'s). typer's rich help keeps the
    lines as written."""
    lines = ["Examples:"]
    for command, note in examples:
        line = f"  {command:<44} {note}".rstrip()
        lines.append(line if len(line) <= 78 else f"  {command}" + (f"\n      {note}" * bool(note)))
    return "\n".join(lines) + "\n\nExit codes: " + exits


def _global_options(
    inventory: Path | None = typer.Option(
        None,
        "-i",
        "--inventory",
        envvar="NETROOT_INVENTORY",
        help="Ansible inventory: a file (YAML, INI) or a directory (default: the lab's).",
        rich_help_panel=GLOBAL_PANEL,
    ),
    verbose: int = typer.Option(
        0,
        "-v",
        "--verbose",
        count=True,
        show_default=False,
        help="More detail on stderr (-vv: Ansible's and netroot's debug log too).",
        rich_help_panel=GLOBAL_PANEL,
    ),
    quiet: bool = typer.Option(
        False, "-q", "--quiet", help="Only errors on stderr.", rich_help_panel=GLOBAL_PANEL
    ),
) -> None:
    """Never called: typer reads the options from its signature."""


def _table_options(
    tsv: bool = typer.Option(
        False, "--tsv", help="Tables as tab-separated lines with a header row (for scripts)."
    ),
) -> None:
    """Never called: typer reads the option from its signature."""


def _set(ctx: typer.Context, param: Any, value: Any) -> Any:
    """Where a global option's value goes: the invocation's AppContext (given twice: the
    inventory after the command's name wins, -v counts add up)."""
    app = get(ctx)
    if param.name == "inventory" and value is not None:
        app.inventory_path = Path(value)
    elif param.name == "verbose":
        app.verbose += int(value or 0)
    elif param.name == "quiet" and value:
        app.quiet = True
    elif param.name == "tsv" and value:
        app.out.tsv = True
    app.configure()
    return value


@cache
def _declared(function: Callable[..., None]) -> tuple[Any, ...]:
    holder = typer.Typer(add_completion=False)
    holder.command()(function)
    return tuple(typer.main.get_command(holder).params)


def _copies(function: Callable[..., None]) -> list[Any]:
    """Fresh copies of the options declared by `function`, writing into the AppContext."""
    out = []
    for declared in _declared(function):
        param = copy.copy(declared)
        param.expose_value = False
        param.callback = _set
        out.append(param)
    return out


def _no_value_placeholder(params: list[Any]) -> None:
    # typer shows a type for every option (`--yes <bool>`); a flag or a counter takes no value.
    for param in params:
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""


class _Shared:
    """The global options (and --tsv where --json is) added to a command or group."""

    params: list[Any]

    def _add_shared(self) -> None:
        opts = {o for p in self.params for o in getattr(p, "opts", [])}
        self.params.extend(_copies(_global_options))
        if "--json" in opts:
            self.params.extend(_copies(_table_options))

    def get_params(self, ctx: Any) -> list[Any]:
        # Here, not at construction: typer adds --help and the completion options later.
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        _no_value_placeholder(params)
        return params


class NetrootCommand(_Shared, TyperCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._add_shared()

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # Said here, where the command's own note is known (main() has the last word).
            from netroot.errors import Interrupted

            raise Interrupted(get(ctx).on_interrupt()) from None


class NetrootGroup(_Shared, TyperGroup):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._add_shared()


class NetrootTyper(typer.Typer):
    """A typer app whose commands and groups take the global options (NetrootCommand)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", NetrootGroup)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[_F], _F]:
        kwargs.setdefault("cls", NetrootCommand)
        register: Callable[[_F], _F] = super().command(*args, **kwargs)
        return register
