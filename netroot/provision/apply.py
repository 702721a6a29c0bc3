"""`provision()`: the Python API behind `netroot provision`, also used by rollout.

    from netroot.provision.apply import provision
    result = provision(inventory, ["pi-01", "pi-02"], versions={"pi-02": "3f2a..."})
    result.summary.hosts["pi-02"].state     # "ok" | "changed" | "failed" | "unreachable"
    result.mounted["pi-02"]                 # the version the board has mounted afterwards

Plan first, then apply: the plan (targets, per-board versions, extra vars) and every template
are checked for every host before Ansible connects anywhere; a bad value raises UsageError
(exit 2) naming the host, and no host is touched.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

from netroot.errors import Exit
from netroot.inventory import Inventory
from netroot.provision.plan import PlanOptions, RunPlan, build
from netroot.provision.progress import Summary
from netroot.remote import nfs_check
from netroot.templating import Renderer, TemplateProblem

EventHandler = Callable[[Mapping[str, Any], Summary], None]
Runner = Callable[[RunPlan, Callable[[Mapping[str, Any]], None]], Any]


@dataclass
class ProvisionResult:
    plan: RunPlan
    summary: Summary
    status: str  # ansible-runner's status
    rc: int  # ansible-playbook's exit code
    run_dir: Path | None
    stdout_tail: str = ""
    mounted: dict[str, str] = field(default_factory=dict)  # board -> version id now mounted

    @property
    def exit_code(self) -> Exit:
        code = self.summary.exit_code
        if code == Exit.OK and self.rc != 0:
            return Exit.FAILED  # Ansible stopped before any host result (syntax, options)
        return code

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.summary.as_dict(),
            "exit_code": int(self.exit_code),
            "mounted": dict(sorted(self.mounted.items())),
            "plan": self.plan.as_dict(),
            "ansible_rc": self.rc,
            "run_dir": str(self.run_dir) if self.run_dir else None,
        }


def preflight(plan: RunPlan, inventory: Inventory) -> Renderer:
    """Render every template of the run for its hosts and check the exports it would write."""
    renderer = Renderer(inventory, plan.extravars)
    overrides = plan.extravars.get("netroot_version_overrides", {})
    for server in plan.servers:
        kind = inventory.servers[server].kind
        for rendered in renderer.render_server(server):
            if rendered.template != kind.exports_template:
                continue
            block = f"{nfs_check.BEGIN}\n{rendered.text}{nfs_check.END}\n"
            problems = nfs_check.CHECKS[kind.check_format](block)
            if problems:
                first = problems[0]
                why = f"rendered line {first.line - 1} fails the exports check: {first.message}"
                raise TemplateProblem(rendered.template, None, server, why)
    for board in plan.boards:
        version = overrides.get(board)
        renderer.render_board(board, version)
    return renderer


def check_become(inventory: Inventory, hosts: list[str], proven: Collection[str] = ()) -> None:
    """Before any host is touched: each host's SSH user can become root (sudo -n) or is root.

    proven: hosts where a command just ran through `sudo -n` (not asked again).
    """
    from netroot.adapters.become import check_privileges
    from netroot.sshtarget import target_for

    check_privileges([target_for(inventory.hosts[h]) for h in hosts], proven)


def provision(
    inventory: Inventory,
    targets: list[str],
    *,
    on_event: EventHandler | None = None,
    runner: Runner | None = None,
    become_checked: bool = False,
    **options: Unpack[PlanOptions],
) -> ProvisionResult:
    """Provision `targets` (host or group names, or all_hosts); `versions` pins boards.

    options: the plan's (plan.PlanOptions, forwarded to plan.build). versions: board name ->
    version id, for this run only (extra vars win over the inventory's netroot_version);
    unlisted boards run their pinned netroot_version, else the image's `current`.
    server_configured: skip configuring the server (boards.yml; the rollout's later batches).
    become_checked: the caller already ran `check_become` on every host of the run (a rollout
    checks them all before it starts). Returns the summary; host failures are results, not
    exceptions.
    """
    plan = build(inventory, targets, **options)
    preflight(plan, inventory)
    if runner is None and not become_checked:
        # A real run: every host's user must get root without a password.
        check_become(inventory, [*plan.servers, *plan.boards])
    summary = Summary()
    mounted: dict[str, str] = {}

    def handle(event: Mapping[str, Any]) -> None:
        summary.apply(event)
        _record_mounted(event, mounted)
        if on_event is not None:
            on_event(event, summary)

    if runner is None:
        from netroot.adapters.ansible import run_playbook

        outcome = run_playbook(plan, handle)
    else:
        outcome = runner(plan, handle)
    return ProvisionResult(
        plan, summary, outcome.status, outcome.rc, outcome.run_dir, outcome.stdout_tail, mounted
    )


def _record_mounted(event: Mapping[str, Any], mounted: dict[str, str]) -> None:
    """The board role's last task reports the version it left mounted."""
    data = event.get("event_data") or {}
    if event.get("event") != "runner_on_ok" or not isinstance(data, Mapping):
        return
    res = data.get("res") or {}
    facts = res.get("ansible_facts") if isinstance(res, Mapping) else None
    if isinstance(facts, Mapping) and facts.get("netroot_board_mounted_version"):
        mounted[str(data.get("host"))] = str(facts["netroot_board_mounted_version"])


__all__ = ["ProvisionResult", "TemplateProblem", "preflight", "provision"]
