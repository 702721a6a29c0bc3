"""Output never reads user text as rich markup (a check id like `[/dev]` once crashed smoke)."""

from __future__ import annotations

import io

from rich.console import Console

from netroot.console import Output


def _output() -> tuple[Output, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Output(err=Console(file=err, width=200), out=Console(file=out, width=200)), out, err


def test_table_cells_are_plain_text() -> None:
    output, out, _ = _output()
    output.table("smoke", ["check"], [["test_pseudo_filesystems[/dev]"], ["[bold]x[/bold]"]])
    text = out.getvalue()
    assert "test_pseudo_filesystems[/dev]" in text and "[bold]x[/bold]" in text


def test_errors_and_info_keep_brackets() -> None:
    output, _, err = _output()
    output.error("bad member [/etc]", "remove [x] from the archive")
    output.info("copied [/dev]")
    text = err.getvalue()
    assert "bad member [/etc]" in text and "remove [x] from the archive" in text
    assert "copied [/dev]" in text
