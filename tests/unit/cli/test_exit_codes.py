"""One exit code per meaning in every command, the one table; every lock refusal exits 6
naming its holder (command, pid, host, since when) and the way out."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

from rich.console import Console

from netroot.cli.context import AppContext
from netroot.cli.rollout_cmd import _results
from netroot.console import Output
from netroot.errors import EXIT_CODES, EXIT_CODES_HELP, Exit
from netroot.export.manifest import Layout, try_lock
from netroot.fleet.outcome import Outcome
from netroot.remote import lock
from netroot.rollout.engine import BoardResult
from tests.unit.cli.clikit import error_lines, inventory, netroot
from tests.unit.export.tarbuild import Spec, write_tar

HOLDER = re.compile(
    r"`[^`]+` \(pid \d+ on \S+, since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, \d+s ago\)"
)


def test_the_table_has_every_code_once() -> None:
    assert [code for code, _ in EXIT_CODES] == list(Exit)
    for code in Exit:
        assert re.search(rf"^\s*{int(code)}  \S", EXIT_CODES_HELP, re.M), code
    done = netroot("--help", home=Path("/nonexistent"))
    assert all(meaning[:30] in " ".join(done.stdout.split()) for _, meaning in EXIT_CODES)


def test_status_says_4_for_an_unreachable_board_and_still_shows_it(tmp_path: Path) -> None:
    inv = inventory(tmp_path, tmp_path / "root")
    done = netroot("status", "-i", str(inv), home=tmp_path)
    assert done.returncode == Exit.UNREACHABLE, done.stderr
    assert "pi-01" in done.stdout and "pi-02" in done.stdout  # the data, whatever the code


def test_a_busy_export_lock_exits_6_naming_its_holder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    source = write_tar(tmp_path / "img.tar", [Spec("etc", "d", mode=0o755), Spec("etc/x")])
    first = netroot("export", str(source), "--name", "img", "--root", str(root), home=tmp_path)
    assert first.returncode == 0, first.stderr
    held = try_lock(Layout(root, "img"))  # this process is the other exporter
    assert held is not None
    try:
        for args in (("export", str(source), "--name", "img"), ("prune", "img", "--keep", "1")):
            done = netroot(*args, "--root", str(root), home=tmp_path)
            assert done.returncode == Exit.BUSY, (args, done.stderr)
            message, hint = error_lines(done.stderr)
            assert HOLDER.search(message) and f"pid {os.getpid()} on " in message, message
            assert hint.startswith("hint: wait for it to finish, or stop it"), hint
    finally:
        os.close(held)
    again = netroot("export", str(source), "--name", "img", "--root", str(root), home=tmp_path)
    assert again.returncode == 0, again.stderr  # released with its holder's fd


def test_the_writer_lock_names_its_holder_with_its_age(tmp_path: Path) -> None:
    root = tmp_path / "root"
    inv = inventory(tmp_path, root)
    holder = lock.acquire(root, "netroot rollout other:1")
    try:
        done = netroot("provision", "boards", "-i", str(inv), home=tmp_path)
    finally:
        lock.release(root, holder)
    assert done.returncode == Exit.BUSY, done.stderr
    message, hint = error_lines(done.stderr)
    assert HOLDER.search(message) and "`netroot rollout other:1`" in message, message
    assert f"kill {holder.pid}" in hint, hint


def test_rollback_prints_its_table_under_its_own_name() -> None:
    out = io.StringIO()
    app = AppContext(out=Output(out=Console(file=out, width=200)))
    result = BoardResult("pi-01", -1, Outcome.ROLLED_BACK, "0123456789abcdef", "")
    _results(app, "rollback", [result], False, {}, canary=False)
    assert out.getvalue().splitlines()[0].rstrip() == "rollback"


def test_rollback_and_rollout_say_4_for_an_unreachable_board() -> None:
    from netroot.cli.rollout_cmd import _exit_for

    down = BoardResult("pi-02", 0, Outcome.UNREACHABLE, None, "timed out")
    back = BoardResult("pi-01", 0, Outcome.ROLLED_BACK, "0123456789abcdef")
    assert _exit_for([back, down], False, Outcome.ROLLED_BACK) == Exit.UNREACHABLE
    assert _exit_for([back], False, Outcome.ROLLED_BACK) == Exit.OK
    ok = BoardResult("pi-01", 0, Outcome.OK, "0123456789abcdef")
    assert _exit_for([ok, down], False, Outcome.OK) == Exit.UNREACHABLE
