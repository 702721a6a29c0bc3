"""`netroot provision TARGET... [--all] [--check] [--diff] [--json]`."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from netroot.cli import context
from netroot.console import Output

if TYPE_CHECKING:  # the provision room (and the inventory) load only when provision runs
    from netroot.provision.progress import Summary

HELP = (
    "Configure the NFS server and boards with Ansible, each board on its version.\n\n"
    "Exports on the server; netroot-mount, "
    "netroot-chroot and the boot unit on the boards, with the assigned version mounted. "
    "Boards with netroot_boot: netboot get no scripts: the server runs dnsmasq (proxy-DHCP + "
    "TFTP, its config checked with dnsmasq --test first), the board's TFTP directory is pointed "
    "at its version and the board rebooted into it when it booted another. "
    "TARGET is a host or group of the inventory; the NFS server play always runs (its exports "
    "list every board); it reads the server's state in one round trip and configures the "
    "server only when its inputs or files changed since its last successful run (README: "
    "the NFS server's configuration). Each board mounts what it should run: its inventory "
    "pin, else its assignment (a board keeps it through any provision), else the image's "
    "`current`. "
    "--check --diff shows what would change without changing anything (no state, no lock). "
    "Takes the export root's writer lock (exit 6 when another rollout, rollback or provision "
    "holds it). Ansible's run logs: NETROOT_HOME/provision/runs/<inventory>-<hash>/ (the "
    "last 10 runs of each inventory are kept)."
)
EPILOG = context.epilog(
    [
        ("netroot provision --all", "the server and every board"),
        ("netroot provision pi-01 -i inventory.yml", "the server play, then pi-01"),
        ("netroot provision --all --check --diff", "what would change; changes nothing"),
    ],
    "0 done, 1 a task failed, 2 bad input (inventory), 4 a host unreachable, 5 "
    "ansible-playbook missing, 6 another writer holds the export root's lock (named), 130 "
    "interrupted (hosts may be partly configured; nothing recorded; run it again).",
)
INTERRUPTED = (
    "interrupted: the playbook was stopped mid-run; hosts may be partly configured and "
    "nothing was recorded in the fleet state; provision again (it only changes what differs)"
)


def _live_view(summary: Summary) -> Group:
    progress = summary.progress
    head = Text.assemble(
        (progress.play, "bold"), f" > {progress.task} ", (f"({progress.tasks_started})", "dim")
    )
    table = Table.grid(padding=(0, 2))
    for host, last in sorted(progress.last.items()):
        style = (
            "red"
            if last.startswith(("failed", "unreachable"))
            else ("yellow" if last.startswith("changed") else "green")
        )
        table.add_row(host, Text(last, style=style))
    return Group(head, table)


class _Reporter:
    """Progress on stderr: a live view on a terminal, one line per task otherwise."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.live: Live | None = None
        self._task = ""

    def __enter__(self) -> _Reporter:
        if self.out.show_progress:
            self.live = Live(console=self.out.err, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def __call__(self, event: Mapping[str, Any], summary: Summary) -> None:
        if self.live is not None:
            self.live.update(_live_view(summary))
        elif summary.progress.task != self._task:
            self._task = summary.progress.task
            self.out.debug(f"{summary.progress.play} > {self._task}")
        kind = event.get("event")
        if kind in ("runner_on_failed", "runner_on_unreachable") and summary.failures:
            failure = summary.failures[-1]
            if not (event.get("event_data") or {}).get("ignore_errors"):
                detail = escape(f"{failure.task}: {failure.message}")
                self.out.err.print(
                    f"[red]{escape(failure.host)}[/red]: {detail}",
                    highlight=False,
                    markup=True,
                )


def register(app: typer.Typer) -> None:
    @app.command(
        "provision",
        help=HELP,
        short_help="Configure the NFS server and boards with Ansible.",
        epilog=EPILOG,
    )
    def provision_cmd(
        ctx: typer.Context,
        targets: list[str] = typer.Argument(None, help="Hosts or groups of the inventory."),
        all_hosts: bool = typer.Option(False, "--all", help="Every host of the inventory."),
        check: bool = typer.Option(False, "--check", help="Change nothing; report what would."),
        diff: bool = typer.Option(False, "--diff", help="Show the changes to files."),
        as_json: bool = typer.Option(False, "--json", help="The summary as JSON on stdout."),
        break_lock: bool = typer.Option(
            False, "--break-lock", help="Take over a lock whose holder ran on another host."
        ),
    ) -> None:
        from netroot.fleet.rules import provision_versions, record_provision
        from netroot.fleet.where import open_fleet
        from netroot.provision.apply import provision

        app_ctx = context.get(ctx)
        out = app_ctx.out
        fleet = open_fleet(app_ctx.inventory())
        inventory = fleet.inventory
        boards = [inventory.boards[h] for h in inventory.expand(list(targets or []), all_hosts)
                  if h in inventory.boards]  # fmt: skip
        command = "netroot " + shlex.join(sys.argv[1:])
        if not check:
            app_ctx.on_interrupt = lambda: INTERRUPTED
        with fleet.writing(command, break_lock=break_lock, check=check) as state:
            versions = provision_versions(fleet.desired(boards, state))
            with _Reporter(out) as reporter:
                result = provision(
                    inventory,
                    list(targets or []),
                    all_hosts=all_hosts,
                    versions=versions,
                    check=check,
                    diff=diff,
                    on_event=reporter,
                )
            record_provision(state, result.mounted)
        summary = result.summary
        if as_json:
            out.json(result.as_dict())
        else:
            if diff:
                for change in summary.changes:
                    out.out.print(f"--- {change.host}: {change.task}", highlight=False)
                    out.out.print(change.diff, highlight=False, markup=False)
            rows = [
                (
                    host,
                    s.state,
                    s.ok,
                    s.changed,
                    s.failed,
                    s.unreachable,
                    s.skipped,
                    result.mounted.get(host, ""),
                )
                for host, s in sorted(summary.hosts.items())
            ]
            title = "provision (check mode: nothing changed)" if check else "provision"
            out.table(
                title,
                ("host", "state", "ok", "changed", "failed", "unreachable", "skipped", "mounted"),
                rows,
            )
        for failure in summary.failures:
            kind = "unreachable" if failure.unreachable else "failed"
            for line in failure.lines:
                out.error(f"{failure.host} {kind} at task {failure.task!r}: {line}")
        if not summary.hosts and result.rc:
            out.error(
                f"ansible-playbook exited {result.rc} before any host result",
                f"{result.stdout_tail.strip()[-500:]}\n(run dir: {result.run_dir})",
            )
        raise typer.Exit(int(result.exit_code))
