"""Ctrl-C during a playbook stops it and raises KeyboardInterrupt (ansible-runner alone would
swallow SIGINT and report "canceled", which a rollout took for a failed board)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from netroot.adapters.ansible import RunOutcome, run_playbook
from netroot.provision.plan import RunPlan

pytestmark = pytest.mark.integration


def _interrupted_run(
    tmp_path: Path, wait_task: str, disposition: Any
) -> tuple[RunOutcome | KeyboardInterrupt, bool, bool, Any]:
    """Run a playbook on localhost (WAIT_TASK, then touch a marker) with SIGINT set to
    DISPOSITION, and send this process SIGINT once the first task has started.

    Returns the run's outcome (or the KeyboardInterrupt it raised), whether the task started,
    whether the marker was touched (the playbook ran to the end), and the SIGINT handler found
    right after the run (run_playbook must put back the one it found)."""
    books = tmp_path / "playbooks"
    books.mkdir()
    (books / "ansible.cfg").write_text("[defaults]\nhost_key_checking = True\n")
    marker = tmp_path / "finished"
    (books / "play.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        f"    - {wait_task}\n"
        f"    - ansible.builtin.raw: touch {marker}\n"  # raw: no Python module, no interpreter
    )
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    started = threading.Event()

    def on_event(event: object) -> None:
        if str(getattr(event, "get", lambda _k: "")("event")) == "runner_on_start":
            started.set()

    def interrupt() -> None:
        started.wait(120)
        os.kill(os.getpid(), signal.SIGINT)

    suite = signal.signal(signal.SIGINT, disposition)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        outcome: RunOutcome | KeyboardInterrupt
        try:
            outcome = run_playbook(
                RunPlan("play.yml", inventory, ()), on_event, base_dir=tmp_path / "runs",
                playbooks_dir=books,
            )  # fmt: skip
        except KeyboardInterrupt as exc:
            outcome = exc
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, suite)
    return outcome, started.is_set(), marker.exists(), after


def test_sigint_cancels_the_playbook_and_raises(tmp_path: Path) -> None:
    # As at a terminal (the suite may run with SIGINT ignored: nohup, a background job).
    outcome, started, finished, after = _interrupted_run(
        tmp_path, "ansible.builtin.command: sleep 60", signal.default_int_handler
    )
    assert isinstance(outcome, KeyboardInterrupt), outcome
    assert after is signal.default_int_handler  # put back
    assert started
    assert not finished, "the playbook ran to the end instead of being canceled"


def test_a_process_that_ignores_sigint_runs_the_playbook_to_the_end(tmp_path: Path) -> None:
    """Under nohup or in a script's background job SIGINT is ignored: a stray one must not
    cancel the playbook either (netroot ignores it everywhere else)."""
    outcome, started, finished, after = _interrupted_run(
        tmp_path, "ansible.builtin.raw: sleep 3", signal.SIG_IGN
    )
    assert not isinstance(outcome, KeyboardInterrupt), "a SIGINT the process ignores raised"
    assert after is signal.SIG_IGN
    assert started and outcome.rc == 0
    assert finished, "a SIGINT the process ignores canceled the playbook"
