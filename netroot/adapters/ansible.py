"""Run the playbooks through ansible-runner, streaming its events (adapter).

One fresh private data dir per run under state_dir()/provision/runs/INVENTORY-HASH/ (runner
would otherwise re-read a previous run's env/extravars), the playbooks used in place as the
project dir, and the project's ansible.cfg. The last runs of each inventory are kept for
debugging (artifacts/, job events): a throwaway inventory's runs never evict the lab's.

Ctrl-C: ansible-runner would catch SIGINT itself and report the run as merely "canceled",
which callers would take for a failed play (a rollout then rolled the board back instead of
stopping). Here SIGINT cancels the playbook cleanly and then raises KeyboardInterrupt.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from netroot.errors import EnvironmentMissing
from netroot.paths import project_file, state_dir

KEEP_RUNS = 10
EventHandler = Callable[[Mapping[str, Any]], None]


class Playbook(Protocol):
    """One run's inputs, as the caller planned them (provision.plan.RunPlan is one): the
    adapter is handed values and knows nothing of how they were decided."""

    @property
    def playbook(self) -> str: ...  # relative to playbooks/
    @property
    def inventory(self) -> Path: ...
    @property
    def limit(self) -> tuple[str, ...]: ...
    @property
    def extravars(self) -> Mapping[str, Any]: ...
    @property
    def cmdline(self) -> str: ...


@dataclass(frozen=True)
class RunOutcome:
    status: str  # runner's: successful, failed, timeout, canceled
    rc: int  # ansible-playbook's exit code
    run_dir: Path
    stdout_tail: str  # the last lines of Ansible's own output, for errors before any play


def runs_dir(inventory: Path | None = None) -> Path:
    """Where Ansible's run dirs go: all of them, or those of one inventory (its name and a
    short hash of its resolved path, so two inventories never share, nor evict each other's)."""
    base = state_dir() / "provision" / "runs"
    if inventory is None:
        return base
    resolved = Path(inventory).resolve()
    key = hashlib.sha256(str(resolved).encode()).hexdigest()[:8]
    return base / f"{resolved.stem or 'inventory'}-{key}"


IN_USE = ".in-use"  # each run holds an flock on it while ansible-runner writes the run dir


def _in_use(run: Path) -> bool:
    try:
        fd = os.open(run / IN_USE, os.O_RDONLY)
    except OSError:
        return False  # a run of an older netroot, or one already over
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _prune(base: Path, keep: int) -> None:
    """Remove all but the newest `keep` runs, never one still running: several netroot
    commands (other inventories, the lab's tests) share this directory, and a run dir removed
    under ansible-runner fails that command."""
    runs = sorted(p for p in base.iterdir() if p.is_dir())
    for old in runs[:-keep]:
        if not _in_use(old):
            shutil.rmtree(old, ignore_errors=True)


def run_playbook(
    plan: Playbook,
    on_event: EventHandler,
    *,
    base_dir: Path | None = None,
    playbooks_dir: Path | None = None,
) -> RunOutcome:
    """Run `plan` and call `on_event` for every runner event; never raises for host failures."""
    try:
        import ansible_runner
    except ImportError as exc:  # pragma: no cover - a dependency of netroot
        raise EnvironmentMissing("ansible-runner is not installed", "pip install netroot") from exc
    # ansible-playbook lives next to this interpreter (a venv is often not on PATH).
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    if shutil.which("ansible-playbook", path=path) is None:
        raise EnvironmentMissing("ansible-playbook not found", "pip install ansible-core")
    playbooks = playbooks_dir or project_file("playbooks")
    base = base_dir or runs_dir(plan.inventory)
    base.mkdir(parents=True, exist_ok=True)
    run_dir = base / time.strftime("%Y%m%dT%H%M%S")
    suffix = 0
    while run_dir.exists():
        suffix += 1
        run_dir = base / f"{time.strftime('%Y%m%dT%H%M%S')}-{suffix}"
    run_dir.mkdir(parents=True)
    in_use = os.open(run_dir / IN_USE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(in_use, fcntl.LOCK_EX)  # released when the fd closes, or this process dies
    try:
        _prune(base, KEEP_RUNS)
        return _run_in(run_dir, playbooks, plan, on_event, path, ansible_runner)
    finally:
        os.close(in_use)


def _run_in(
    run_dir: Path,
    playbooks: Path,
    plan: Playbook,
    on_event: EventHandler,
    path: str,
    ansible_runner: Any,
) -> RunOutcome:

    def handler(event: Mapping[str, Any]) -> bool:
        on_event(event)
        return True  # keep it in the artifacts too

    interrupted = threading.Event()
    previous: Any = None
    # Ctrl-C cancels the playbook, unless this process ignores SIGINT (nohup, a background job
    # of a script): then it ignores it here too, as it does everywhere else.
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    ):
        previous = signal.signal(signal.SIGINT, lambda _sig, _frame: interrupted.set())
    try:
        runner = _run(ansible_runner, run_dir, playbooks, plan, handler, path, interrupted)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted.is_set():
        raise KeyboardInterrupt
    stdout = ""
    stdout_file = Path(runner.config.artifact_dir) / "stdout"
    if stdout_file.exists():
        stdout = "\n".join(stdout_file.read_text(errors="replace").splitlines()[-15:])
    return RunOutcome(
        str(runner.status), int(runner.rc if runner.rc is not None else 1), run_dir, stdout
    )


def _run(
    ansible_runner: Any,
    run_dir: Path,
    playbooks: Path,
    plan: Playbook,
    handler: Callable[[Mapping[str, Any]], bool],
    path: str,
    interrupted: threading.Event,
) -> Any:
    return ansible_runner.run(
        private_data_dir=str(run_dir),
        project_dir=str(playbooks),
        playbook=plan.playbook,
        inventory=str(Path(plan.inventory).resolve()),
        extravars=dict(plan.extravars) or None,
        limit=",".join(plan.limit) or None,
        cmdline=plan.cmdline or None,
        event_handler=handler,
        quiet=True,
        envvars={
            "ANSIBLE_CONFIG": str(playbooks / "ansible.cfg"),
            "ANSIBLE_ROLES_PATH": str(playbooks / "roles"),
            "ANSIBLE_NOCOLOR": "1",
            # ansible-runner turns host key checking off unless told otherwise; netroot never
            # auto-accepts a host key (the inventory's known_hosts is the authority).
            "ANSIBLE_HOST_KEY_CHECKING": "True",
            "PATH": path,
        },
        settings={"suppress_ansible_output": True},
        cancel_callback=interrupted.is_set,
    )
