"""`netroot rollout` and `netroot rollback`: lab-wide, canary first, with a failure budget."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from netroot.cli.context import AppContext, get
from netroot.errors import UsageError

ROLLOUT_EPILOG = (
    "Exit codes: 0 every board on the new version and smoked green, 1 stopped (budget spent or "
    "canary failed; failed boards back on their last good version), 2 bad input, 4 some boards "
    "unreachable (the rest completed), 130 interrupted (run the same command again to resume, "
    "or `netroot rollback`)."
)


def _confirm(app: AppContext, yes: bool, question: str) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("not asking on a non-interactive stdin", "pass --yes to go ahead")
    if not typer.confirm(question, err=True):
        raise typer.Exit(1)


def _seed_current(app: AppContext, boards: list[Any], state: Any) -> dict[str, str | None]:
    """What each board runs now, as observed on it (in parallel); its last good version when
    it cannot be reached. A board whose recorded version is not mounted (rebooted without its
    mount, a lab resumed before provisioning) is not taken as already there."""
    from concurrent.futures import ThreadPoolExecutor

    from netroot.rollout.status import observe

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(boards)))) as pool:
        observed = dict(zip([b.name for b in boards], pool.map(observe, boards), strict=True))
    current: dict[str, str | None] = {}
    for board in boards:
        st = state.board(board.name)
        facts, _ = observed[board.name]
        if facts is None:
            current[board.name] = st.last_good
            continue
        if st.last_good is None and facts.mounted:
            st.assigned = st.assigned or facts.mounted
            st.record_good(facts.mounted)  # it ran before netroot's rollout: our fallback
        if facts.mounted != st.last_good:
            app.out.info(f"{board.name}: has {facts.mounted or 'nothing'} mounted")
        current[board.name] = facts.mounted
    return current


def _results_table(
    app: AppContext, results: list[Any], as_json: bool, extra: dict[str, Any], canary: bool
) -> None:
    rows = [
        {
            "board": r.board,
            "batch": r.batch,
            "outcome": r.outcome,
            "version": r.version,
            "message": r.message,
        }
        for r in results
    ]
    if as_json:
        app.out.json({**extra, "boards": rows})
        return
    app.out.table(
        "rollout",
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


def rollout(
    ctx: typer.Context,
    source: str = typer.Argument(..., help="Image (repo:tag, id) or tar archive to roll out."),
    group: str = typer.Option("boards", "--group", "-g", help="Boards or group to roll out to."),
    name: str | None = typer.Option(None, "--name", help="Export name (default: repository)."),
    canary: int = typer.Option(1, "--canary", help="Boards in the canary batch."),
    batch: str = typer.Option("1", "--batch", help="Batch size after the canary: N or P%."),
    max_fail: str = typer.Option("0", "--max-fail", help="Failures tolerated: N or P%."),
    stagger: float = typer.Option(0.0, "--stagger", help="Seconds between boards' remounts."),
    checks: Path | None = typer.Option(None, "--checks", help="Your testinfra checks (a dir)."),
    qpu: str = typer.Option("auto", "--qpu", help="QPU smoke: auto, require, skip, emulate."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before starting."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and stop."),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout."),
) -> None:
    """Export (or reuse) a version, then switch boards canary first, batch by batch, smoked."""
    from netroot.export import service
    from netroot.export.open import name_for, open_source
    from netroot.provision.service import check_become
    from netroot.rollout.engine import run_rollout
    from netroot.rollout.fleet import AnsibleFleet
    from netroot.rollout.plan import Count, make_plan
    from netroot.rollout.state import load_state

    app = get(ctx)
    inv = app.inventory()
    batch_count = Count.parse(batch, "--batch")
    fail_count = Count.parse(max_fail, "--max-fail")
    targets = inv.resolve([group])
    info, apply = open_source(source)
    name = name or name_for(source, info)
    pinned = [b.name for b in targets if b.version]
    boards = [b for b in targets if not b.version]
    other = [b.name for b in boards if b.image != name]
    if other:
        raise UsageError(
            f"boards {', '.join(other)} run another image than {name!r}",
            "pass --name to match their netroot_image, or pick another --group",
        )
    state = load_state(inv.path)
    if not dry_run:  # before anything changes: every host's user gets root without a password
        check_become(inv, [inv.server.name, *(b.name for b in boards)])
    app.out.info(f"export {source} as {name} ...")
    exported = service.export(info, apply, Path(inv.server.export_root), name)
    version = exported.manifest.version
    app.out.info(f"{name} {version}" + (" (already exported)" if exported.noop else ""))
    current = _seed_current(app, boards, state)
    plan = make_plan(
        [b.name for b in boards], current, version, canary, batch_count, fail_count, stagger
    )
    if not as_json:
        app.out.table(
            f"plan: {name} -> {version} (failures tolerated: {plan.max_failures})",
            ["batch", "board", "from", "to"],
            [
                [
                    "canary" if plan.canary and i == 0 else str(i),
                    s.board,
                    s.from_version or "-",
                    s.to_version,
                ]
                for i, b in enumerate(plan.batches)
                for s in b
            ]
            + [["-", b, version, "(already there)"] for b in plan.unchanged]
            + [["-", b, "(pinned)", "(skipped)"] for b in pinned],
        )
    if dry_run:
        if as_json:
            app.out.json({"plan": plan.to_dict(), "pinned": pinned, "dry_run": True})
        return
    if not plan.batches:
        app.out.info("nothing to do: every board already runs this version")
        if as_json:
            app.out.json({"plan": plan.to_dict(), "pinned": pinned, "boards": []})
        return
    _confirm(app, yes, f"roll {version} out to {len(plan.boards)} boards?")
    fleet = AnsibleFleet(inv, qpu_mode=qpu, checks_dir=checks, log=app.out.info)
    result = run_rollout(plan, state, fleet, source, log=app.out.info)
    _results_table(
        app,
        result.results,
        as_json,
        {"plan": plan.to_dict(), "stopped": result.stopped, "reason": result.reason},
        canary=bool(plan.canary),
    )
    if result.stopped:
        app.out.error(f"rollout stopped: {result.reason}")
        raise typer.Exit(1)
    if any(r.outcome != "ok" for r in result.results):
        raise typer.Exit(
            4 if all(r.outcome in ("ok", "unreachable") for r in result.results) else 1
        )


def rollback(
    ctx: typer.Context,
    targets: list[str] = typer.Argument(..., help="Boards or groups."),
    to: str | None = typer.Option(None, "--to", help="Version id (default: the previous good)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask."),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout."),
) -> None:
    """Put boards back on their previous good version (or --to ID), then smoke them."""
    from netroot.export.manifest import Layout
    from netroot.provision.service import check_become
    from netroot.rollout.engine import run_rollback
    from netroot.rollout.fleet import AnsibleFleet
    from netroot.rollout.state import load_state

    app = get(ctx)
    inv = app.inventory()
    boards = inv.resolve(targets)
    state = load_state(inv.path)
    versions: dict[str, str] = {}
    for board in boards:
        want = to or state.board(board.name).previous_good()
        if want is None:
            raise UsageError(f"{board.name}: no earlier good version recorded", "pass --to ID")
        layout = Layout(Path(inv.server.export_root), board.image)
        if not layout.manifest_path(want).exists():
            raise UsageError(
                f"{board.name}: {board.image} has no version {want}",
                f"see `netroot versions {board.image}`",
            )
        versions[board.name] = want
    check_become(inv, [inv.server.name, *versions])
    _confirm(app, yes, "roll back " + ", ".join(f"{b} to {v}" for b, v in versions.items()) + "?")
    results = run_rollback(state, AnsibleFleet(inv, log=app.out.info), versions, app.out.info)
    _results_table(app, results, as_json, {}, canary=False)
    if any(r.outcome != "rolled-back" for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command(epilog=ROLLOUT_EPILOG)(rollout)
    app.command(epilog="Exit codes: 0 rolled back and smoked green, 1 failed, 2 bad input.")(
        rollback
    )
