"""Output: data on stdout (tables or JSON), progress and messages on stderr."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text


@dataclass
class Output:
    """The two streams and the verbosity the user asked for."""

    verbosity: int = 0  # -1 quiet, 0 normal, 1+ verbose
    err: Console = field(
        default_factory=lambda: Console(
            stderr=True, no_color="NO_COLOR" in os.environ, soft_wrap=True
        )
    )
    out: Console = field(
        default_factory=lambda: Console(no_color="NO_COLOR" in os.environ, soft_wrap=True)
    )

    def info(self, message: str, *, markup: bool = False) -> None:
        """A message on stderr; its text is never read as rich markup unless markup=True."""
        if self.verbosity >= 0:
            self.err.print(message, highlight=False, markup=markup)

    def debug(self, message: str) -> None:
        if self.verbosity >= 1:
            self.err.print(Text(message, style="dim"), highlight=False)

    def error(self, message: str, hint: str = "") -> None:
        self.err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False)
        if hint:
            self.err.print(f"[yellow]hint:[/yellow] {escape(hint)}", highlight=False)

    def json(self, data: Any) -> None:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        sys.stdout.flush()

    def table(self, title: str, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
        table = Table(title=title, title_justify="left")
        for col in columns:
            table.add_column(col)
        for row in rows:
            table.add_row(*(c if isinstance(c, Text) else Text(str(c)) for c in row))
        self.out.print(table)

    @property
    def show_progress(self) -> bool:
        return self.verbosity >= 0 and self.err.is_terminal
