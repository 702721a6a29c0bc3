"""Data is printed as it is: no emoji codes, no markup, never cut when piped; --tsv for scripts.

rich once printed `x/y@sha256:abc:` as `sha256🔤`, a root `.../q:fire:/f` as `q🔥/f`, and cut
tables to 80 columns in a pipe (ids ending in "…"). Each hostile string below goes through a
real command: an error, a table cell, a path.
"""

from __future__ import annotations

from pathlib import Path

from tests.unit.cli.clikit import error_lines, netroot
from tests.unit.export.tarbuild import Spec, write_tar

HOSTILE = "x:fire:[bold]y@sha256:abc:"  # an emoji code, markup, a digest-like colon run


def _export(tmp_path: Path) -> tuple[Path, Path]:
    """A rootfs tar under a long hostile path, exported to a local root as `img`."""
    where = tmp_path / ("q:fire:" + "d" * 70) / HOSTILE
    where.mkdir(parents=True)
    source = write_tar(where / "rootfs.tar", [Spec("etc", "d", mode=0o755), Spec("etc/x")])
    root = tmp_path / "root"
    done = netroot("export", str(source), "--name", "img", "--root", str(root), home=tmp_path)
    assert done.returncode == 0, done.stderr
    return source, root


def test_a_path_in_an_error_is_printed_as_typed(tmp_path: Path) -> None:
    missing = tmp_path / "q:fire:" / HOSTILE
    done = netroot("smoke", "pi-01", "--checks", str(missing), home=tmp_path)
    assert done.returncode == 2
    lines = error_lines(done.stderr)
    assert lines and str(missing) in lines[0], done.stderr
    assert "🔥" not in done.stderr and "🔤" not in done.stderr


def test_table_cells_are_whole_and_plain_when_piped(tmp_path: Path) -> None:
    source, root = _export(tmp_path)
    assert len(str(source)) > 80  # a console would cut it at 80 columns in a pipe
    listed = netroot("versions", "img", "--root", str(root), home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert str(source) in listed.stdout, listed.stdout  # whole, on one line, markup as typed
    assert "…" not in listed.stdout and "🔥" not in listed.stdout
    exported = netroot("export", str(source), "--name", "img", "--root", str(root), home=tmp_path)
    assert str(source) in exported.stdout  # the export's own table (source row) too


def test_tsv_is_one_row_a_line_with_a_header(tmp_path: Path) -> None:
    source, root = _export(tmp_path)
    done = netroot("versions", "img", "--root", str(root), "--tsv", home=tmp_path)
    assert done.returncode == 0, done.stderr
    header, *rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert header[:3] == ["", "version", "exported (UTC)"]
    assert len(rows) == 1 and rows[0][0] == "*" and rows[0][3] == str(source)
    json_version = netroot("versions", "img", "--root", str(root), "--json", home=tmp_path)
    assert rows[0][1] in json_version.stdout  # the id whole, as --json has it
