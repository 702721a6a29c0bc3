"""Output: data on stdout (tables, TSV or JSON), progress and messages on stderr.

Everything printed here is someone's data: image names, paths, check ids, Ansible's messages.
rich would read `[bold]` in them as markup and `:fire:` as an emoji code (`x/y@sha256:abc:`
once printed as `sha256🔤`), so both consoles are made with markup, emoji and highlighting
off; netroot's own styling is given as styled Text, or asked for with markup=True on a string
whose data was escaped (`rich.markup.escape`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def plain_console(*, stderr: bool = False) -> Console:
    """A console that prints text as given: no markup, no emoji codes, no highlighting."""
    return Console(
        stderr=stderr,
        no_color="NO_COLOR" in os.environ,
        soft_wrap=True,
        markup=False,
        emoji=False,
        highlight=False,
    )


def _tsv_cell(value: object) -> str:
    # One row per line, one cell per tab: a tab or newline inside a cell would split it.
    text = value.plain if isinstance(value, Text) else str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


@dataclass
class Output:
    """The two streams, the verbosity the user asked for, and how tables are written."""

    verbosity: int = 0  # -1 quiet, 0 normal, 1+ verbose
    err: Console = field(default_factory=lambda: plain_console(stderr=True))
    out: Console = field(default_factory=plain_console)
    tsv: bool = False  # tables as tab-separated values (--tsv), for scripts

    def info(self, message: str, *, markup: bool = False) -> None:
        """A message on stderr; its text is never read as rich markup unless markup=True."""
        if self.verbosity >= 0:
            self.err.print(message, highlight=False, markup=markup, emoji=False)

    def debug(self, message: str) -> None:
        if self.verbosity >= 1:
            self.err.print(Text(message, style="dim"), highlight=False)

    def error(self, message: str, hint: str = "", *, label: str = "error:") -> None:
        """One line naming what failed (and a hint line); shown even with -q."""
        head = Text.assemble((label, "bold red"), " ", message) if label else Text(message)
        self.err.print(head, highlight=False)
        if hint:
            self.err.print(Text.assemble(("hint:", "yellow"), " ", hint), highlight=False)

    def json(self, data: Any) -> None:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        sys.stdout.flush()

    def table(self, title: str, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
        """A table on stdout: boxed on a terminal; whole cells, never cut, when piped."""
        if self.tsv:
            lines = ["\t".join(_tsv_cell(c) for c in columns)]
            lines += ["\t".join(_tsv_cell(c) for c in row) for row in rows]
            sys.stdout.write("".join(line + "\n" for line in lines))
            sys.stdout.flush()
            return
        piped = not self.out.is_terminal
        table = Table(title=Text(title), title_justify="left")
        for col in columns:
            # Piped (a log, a pager, grep): a cell is never folded nor cut with "…".
            table.add_column(Text(col), no_wrap=piped, overflow="ignore" if piped else "fold")
        for row in rows:
            table.add_row(*(c if isinstance(c, Text) else Text(str(c)) for c in row))
        if not piped:
            self.out.print(table)
            return
        # A console's width (80 when piped) would cut the table: print it at its natural width.
        natural = self.out.measure(table, options=self.out.options.update_width(1 << 20))
        width, self.out.width = self.out.width, max(natural.maximum, 1)
        try:
            self.out.print(table, crop=False)
        finally:
            self.out.width = width

    @property
    def show_progress(self) -> bool:
        return self.verbosity >= 0 and self.err.is_terminal
