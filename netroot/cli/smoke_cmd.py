"""`netroot smoke`: testinfra checks inside each board's chroot (a netboot board: its booted
root), then the QPU smoke test."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from netroot.cli.context import AppContext, QpuMode, epilog, get

if TYPE_CHECKING:
    from netroot.smoke.results import BoardReport

EPILOG = epilog(
    [
        ("netroot smoke boards", "every board, the built-in checks"),
        ("netroot smoke pi-01 --checks ./checks --junit smoke.xml", ""),
        ("netroot smoke boards --qpu emulate --tsv", "the QPU kernel on the emulator"),
    ],
    "0 all checks passed (skips allowed), 2 bad input, 3 a check failed, 4 a board was "
    "unreachable (and none failed), 130 interrupted (nothing recorded).",
)


def smoke(
    ctx: typer.Context,
    targets: list[str] = typer.Argument(..., help="Boards or groups from the inventory."),
    as_json: bool = typer.Option(False, "--json", help="JSON report on stdout."),
    junit: Path | None = typer.Option(
        None, "--junit", dir_okay=False, help="Write a JUnit XML report here."
    ),
    checks: Path | None = typer.Option(
        None,
        "--checks",
        exists=True,
        file_okay=False,
        help="A directory of your own testinfra test files, run in the chroot "
        "(on a netboot board, its booted root).",
    ),
    qpu: QpuMode = typer.Option(
        QpuMode.AUTO,
        "--qpu",
        help="auto: run where a VideoCore IV is found, skip elsewhere (require where the "
        "inventory says netroot_qpu: true); require: fail without one; skip; "
        "emulate: run the kernel on netroot's emulator (the GPU is NOT tested).",
    ),
) -> None:
    """Check boards: version mounted, read-only root, identity, the QPU; your checks.

    The built-in checks: the version the board should run is mounted, the root is read-only,
    /dev /proc /sys are there, the architecture and identity are right; then the QPU smoke
    (--qpu) and your testinfra files (--checks).
    """
    from netroot.fleet.rules import smoke_expectations
    from netroot.fleet.where import open_fleet
    from netroot.fsutil import atomic_write
    from netroot.smoke.stage import SmokeSettings
    from netroot.smoke.stages import run_smoke

    app = get(ctx)
    fleet = open_fleet(app.inventory())
    inv = fleet.inventory
    boards = inv.resolve(targets)
    expected = smoke_expectations(fleet.desired(boards, fleet.load()))
    app.out.info(f"smoking {', '.join(b.name for b in boards)} (qpu: {qpu.value})")
    settings = SmokeSettings(checks_dir=checks, qpu_mode=qpu.value)
    report = run_smoke(inv, boards, settings, expected=expected, log=app.out.debug)
    results = ((b.board, b.status, b.reachable) for b in report.boards)
    not_recorded = fleet.record_smoke_results("netroot " + shlex.join(sys.argv[1:]), results)
    if not_recorded:
        app.out.info(f"results not recorded: {not_recorded}")
    if junit is not None:
        atomic_write(junit, report.junit(), durable=False)  # a CI never reads half a report
    if as_json:
        app.out.json(report.to_dict())
    else:
        rows = [row for b in report.boards for row in b.table_rows()]
        app.out.table("smoke", ["board", "check", "status", "detail"], rows)
        show_findings(app, report.boards)
    raise typer.Exit(int(report.exit_code()))


def show_findings(app: AppContext, boards: Iterable[BoardReport]) -> None:
    """What the smoke's stages found beyond pass/fail: each board's notes (stderr), then its
    tables (the torch board's S12 line and operators table); a rollout shows its canary's."""
    boards = list(boards)
    for b in boards:
        for note in b.notes:
            app.out.info(f"{b.board}: {note}")
    if not app.out.tsv:  # one table per TSV stream
        for b in boards:
            for table in b.tables:
                app.out.table(table.title, table.headers, table.rows)


def register(app: typer.Typer) -> None:
    app.command(short_help="Check boards: mount, read-only root, identity, QPU.", epilog=EPILOG)(
        smoke
    )
