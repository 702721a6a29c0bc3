"""`netroot rollout` and `netroot rollback`: parse, call the fleet service, render."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from netroot.cli import interrupted
from netroot.cli.context import (
    JSON_OPTION,
    AppContext,
    QpuMode,
    count_option,
    epilog,
    get,
    name_option,
    version_option,
)
from netroot.errors import Exit, UsageError, worst

ROLLOUT_HELP = (
    "Export a version, then switch boards to it canary first, batch by batch, smoked.\n\n"
    "The version is exported WITHOUT moving the image's `current`: `current` moves only when "
    "the rollout completes with every targeted board on it and smoked green (or by an explicit "
    "`netroot export`, a release). --dry-run, like a declined prompt, only prints the plan: "
    "nothing is exported, staged, recorded or locked. The failure budget (--max-fail) is over "
    "the WHOLE rollout, not per batch; a board that cannot be reached counts as failed; a "
    "batch in which every board fails is judged by the same budget. Failed boards go back on "
    "their last good version. After the results, what the canary's smoke found beyond "
    "pass/fail is shown once (its first board): its notes and tables (on a torch image, S12's "
    "import line and, with --qpu emulate or a QPU, the operators against torch's CPU). One "
    "writer at a time: "
    "a rollout, rollback or provision running on the same export root (from any control "
    "host) makes this one exit 6 naming it.\n\n"
    "Several NFS servers: the version goes to each targeted board's own server; a batch holds "
    "at most netroot_server_reboot_batch boards of one server; the boards of a server that "
    "cannot be reached count as unreachable against the budget (never the canary), the others "
    "go on, and the same command run again once it is back finishes the job."
)
ROLLOUT_EPILOG = epilog(
    [
        ("netroot rollout raspbian:2026-12 --dry-run", "the plan; nothing changes"),
        ("netroot rollout raspbian:2026-12 --yes", "canary, then one board a batch"),
        ("netroot rollout img.tar --name raspbian --batch 25% --max-fail 1 --yes", ""),
        ("netroot rollout raspbian:2026-12 -g lab --qpu emulate --yes", ""),
        (
            "netroot rollout torch:2026-12 -g lab_arm64 --qpu emulate --yes",
            "the canary's torch table",
        ),
    ],
    "0 every board on the new version and smoked green, 1 stopped (budget spent or canary "
    "failed; failed boards back on their last good version), 2 bad input, 4 some boards "
    "unreachable (within the budget; the rest completed), 6 another writer holds the export "
    "root's lock (named), 130 interrupted (stderr says which boards switched; the same "
    "command, from any control host, resumes; `netroot rollback` undoes).",
)
ROLLBACK_EPILOG = epilog(
    [
        ("netroot rollback pi-01 --yes", "back to its previous good version"),
        ("netroot rollback boards --to 3f2a9c0d1e4b5a6f --yes", ""),
    ],
    "0 rolled back and smoked green, 1 failed, 2 bad input, 4 a board unreachable, 6 another "
    "writer holds the export root's lock (named), 130 interrupted (stderr says which boards "
    "are back).",
)
BREAK_LOCK_HELP = "Take over a lock whose holder ran on another host and is gone."


def _confirm(yes: bool, question: str) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("not asking on a non-interactive stdin", "pass --yes to go ahead")
    if not typer.confirm(question, err=True):
        typer.echo("declined: nothing changed", err=True)
        raise typer.Exit(int(Exit.FAILED))


def _command_line() -> str:
    return "netroot " + shlex.join(sys.argv[1:])


def _results(
    app: AppContext, title: str, results: list[Any], as_json: bool, extra: dict[str, Any],
    canary: bool,
) -> None:  # fmt: skip
    rows = [
        {"board": r.board, "batch": r.batch, "outcome": r.outcome.value, "version": r.version,
         "message": r.message}
        for r in results
    ]  # fmt: skip
    if as_json:
        app.out.json({**extra, "boards": rows})
        return
    app.out.table(
        title,
        ["board", "batch", "outcome", "runs", "detail"],
        [
            [
                r["board"],
                "-" if r["batch"] < 0 else "canary" if canary and r["batch"] == 0 else r["batch"],
                r["outcome"],
                r["version"] or "-",
                r["message"],
            ]
            for r in rows
        ],
    )


def _plan_table(app: AppContext, plan: Any, name: str, pinned: list[str]) -> None:
    app.out.table(
        f"plan: {name} -> {plan.to_version} "
        f"(failures tolerated over the whole rollout: {plan.max_failures})",
        ["batch", "board", "from", "to"],
        [["prepare", b.name, "-", "(boot config and its reboot first)"]
         for w in plan.prepare for b in w]
        + [
            ["canary" if plan.canary and i == 0 else str(i), s.board.name, s.from_version or "-",
             s.to_version]
            for i, b in enumerate(plan.batches)
            for s in b
        ]
        + [["-", b.name, plan.to_version, "(already there)"] for b in plan.unchanged]
        + [["-", b, "(pinned)", "(skipped)"] for b in pinned],
    )  # fmt: skip


def _first_smoke_findings(app: AppContext, smokes: Sequence[Any]) -> None:
    """The first smoked board's findings (the canary's; without a canary, the first batch's
    first board): once, since every other board runs the same version (a 100-board rollout,
    even with --canary 0, shows one table)."""
    from netroot.cli.smoke_cmd import show_findings

    if smokes and smokes[0].boards:
        show_findings(app, smokes[0].boards[:1])


def _exit_for(results: list[Any], stopped: bool, ok: Any) -> Exit:
    """The run's code: the worst board's (`ok` is the outcome that counts as done)."""
    from netroot.fleet.outcome import Outcome

    if stopped:
        return Exit.FAILED
    return worst(
        Exit.OK
        if r.outcome == ok
        else Exit.UNREACHABLE
        if r.outcome == Outcome.UNREACHABLE
        else Exit.FAILED
        for r in results
    )


def rollout(
    ctx: typer.Context,
    source: str = typer.Argument(..., help="Image (repo:tag, id) or tar archive to roll out."),
    group: str = typer.Option("boards", "--group", "-g", help="Boards or group to roll out to."),
    name: str | None = typer.Option(
        None, "--name", callback=name_option, help="Export name (default: repository)."
    ),
    canary: int = typer.Option(1, "--canary", min=0, help="Boards in the canary batch."),
    batch: str = typer.Option(
        "1",
        "--batch",
        metavar="N|P%",
        callback=lambda v: count_option(v, "--batch"),
        help="Batch size after the canary: N or P%.",
    ),
    max_fail: str = typer.Option(
        "0",
        "--max-fail",
        metavar="N|P%",
        callback=lambda v: count_option(v, "--max-fail"),
        help="Failures tolerated over the whole rollout (unreachable "
        "boards count): N or P% of the boards to switch.",
    ),
    stagger: float = typer.Option(
        0.0, "--stagger", min=0, help="Seconds between boards' remounts."
    ),
    checks: Path | None = typer.Option(
        None, "--checks", exists=True, file_okay=False, help="Your testinfra checks (a dir)."
    ),
    qpu: QpuMode = typer.Option(QpuMode.AUTO, "--qpu", help="The QPU smoke (see `smoke --help`)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before starting."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; change nothing."),
    break_lock: bool = typer.Option(False, "--break-lock", help=BREAK_LOCK_HELP),
    as_json: bool = JSON_OPTION,
) -> None:
    from netroot.cli.source import name_for, open_source
    from netroot.fleet.outcome import Outcome
    from netroot.fleet.where import open_fleet
    from netroot.provision.apply import check_become
    from netroot.rollout import runner
    from netroot.rollout.plan import Count
    from netroot.smoke.stage import SmokeSettings

    app = get(ctx)
    fleet = open_fleet(app.inventory())
    batch_count = Count.parse(batch, "--batch")
    fail_count = Count.parse(max_fail, "--max-fail")
    smoke = SmokeSettings(checks, qpu.value)
    targets = fleet.inventory.resolve([group])
    info, apply = open_source(source)
    name = name or name_for(source, info)
    if not dry_run:
        fleet.refuse_if_locked(break_lock=break_lock)  # refuse before the slow part
    planned = runner.plan_rollout(
        fleet, targets, info, name, canary, batch_count, fail_count, stagger, app.out.info
    )
    if not as_json:
        _plan_table(app, planned.plan, name, planned.pinned)
    if dry_run or not planned.plan.batches:
        released = False
        if not dry_run:
            app.out.info("nothing to do: every board already runs this version, smoked green")
            with fleet.locked(_command_line(), break_lock=break_lock):
                released = runner.release_if_green(fleet, planned, name, log=app.out.info)
            if released:
                app.out.info(f"{name}: current -> {planned.plan.to_version}")
        if as_json:
            app.out.json({"plan": planned.plan.to_dict(), "pinned": planned.pinned,
                          "dry_run": dry_run, "released": released, "boards": []})  # fmt: skip
        return
    # Before anything changes: every host's user gets root without a password (sudo -n).
    # The boards planning observed just ran its probe through sudo -n: not asked again.
    inv = fleet.inventory
    observed = [b for b, facts in planned.observed.items() if facts is not None]
    servers = [s.name for s in inv.servers_for(planned.boards)]  # each board's own server
    check_become(inv, [*servers, *(b.name for b in planned.boards)], proven=observed)
    _confirm(yes, f"roll {planned.plan.to_version} out to {len(planned.plan.boards)} boards?")
    boards = [s.board.name for b in planned.plan.batches for s in b]
    app.on_interrupt = lambda: interrupted.switched(fleet, boards, planned.plan.to_version)
    with fleet.locked(_command_line(), break_lock=break_lock):
        outcome = runner.run(
            fleet, planned, source, info, apply, name, smoke, app.out.info,
            become_checked=True,
        )  # fmt: skip
    result = outcome.result
    _results(
        app,
        "rollout",
        result.results,
        as_json,
        {"plan": planned.plan.to_dict(), "stopped": result.stopped, "reason": result.reason,
         "released": outcome.released},
        canary=bool(planned.plan.canary),
    )  # fmt: skip
    if not as_json:
        _first_smoke_findings(app, outcome.smokes)
    if outcome.released:
        app.out.info(f"{name}: current -> {planned.plan.to_version}")
    if result.stopped:
        app.out.error(f"rollout stopped: {result.reason}", f"{name}'s current is unchanged")
    raise typer.Exit(int(_exit_for(result.results, result.stopped, Outcome.OK)))


def rollback(
    ctx: typer.Context,
    targets: list[str] = typer.Argument(..., help="Boards or groups."),
    to: str | None = typer.Option(
        None, "--to", callback=version_option, help="Version id (default: the previous good)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
    break_lock: bool = typer.Option(False, "--break-lock", help=BREAK_LOCK_HELP),
    as_json: bool = JSON_OPTION,
) -> None:
    """Put boards back on their previous good version (or --to ID), then smoke them."""
    from netroot.fleet.outcome import Outcome
    from netroot.fleet.where import open_fleet
    from netroot.provision.apply import check_become
    from netroot.rollout import runner

    app = get(ctx)
    fleet = open_fleet(app.inventory())
    boards = fleet.inventory.resolve(targets)
    fleet.refuse_if_locked(break_lock=break_lock)
    versions = runner.rollback_versions(fleet, boards, to)
    servers = [s.name for s in fleet.inventory.servers_for(boards)]
    check_become(fleet.inventory, [*servers, *versions])
    _confirm(yes, "roll back " + ", ".join(f"{b} to {v}" for b, v in versions.items()) + "?")
    app.on_interrupt = lambda: interrupted.rolled_back(fleet, versions)
    with fleet.locked(_command_line(), break_lock=break_lock):
        results = runner.rollback(fleet, boards, to, app.out.info, become_checked=True)
    _results(app, "rollback", results, as_json, {}, canary=False)
    raise typer.Exit(int(_exit_for(results, False, Outcome.ROLLED_BACK)))


def register(app: typer.Typer) -> None:
    app.command(
        help=ROLLOUT_HELP,
        short_help="Switch boards to a new version: canary, then batches.",
        epilog=ROLLOUT_EPILOG,
    )(rollout)
    app.command(
        short_help="Put boards back on their previous good version.", epilog=ROLLBACK_EPILOG
    )(rollback)
