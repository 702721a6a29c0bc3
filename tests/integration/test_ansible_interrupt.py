"""Ctrl-C during a playbook stops it and raises KeyboardInterrupt (ansible-runner alone would
swallow SIGINT and report "canceled", which a rollout took for a failed board)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from netroot.adapters.ansible import run_playbook
from netroot.provision.plan import RunPlan

pytestmark = pytest.mark.integration


def test_sigint_cancels_the_playbook_and_raises(tmp_path: Path) -> None:
    books = tmp_path / "playbooks"
    books.mkdir()
    (books / "ansible.cfg").write_text("[defaults]\nhost_key_checking = True\n")
    marker = tmp_path / "finished"
    (books / "slow.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.command: sleep 60\n"
        f"    - ansible.builtin.file: {{path: {marker}, state: touch}}\n"
    )
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    events: list[str] = []
    started = threading.Event()

    def on_event(event: object) -> None:
        events.append(str(getattr(event, "get", lambda _k: "")("event")))
        if events[-1] == "runner_on_start":
            started.set()

    def interrupt() -> None:
        started.wait(120)
        os.kill(os.getpid(), signal.SIGINT)

    # As at a terminal (the suite may run with SIGINT ignored: nohup, a background job);
    # run_playbook must put this handler back.
    suite = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_playbook(
                RunPlan("slow.yml", inventory, ()), on_event, base_dir=tmp_path / "runs",
                playbooks_dir=books,
            )  # fmt: skip
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, suite)
    assert started.is_set()
    assert not marker.exists(), "the playbook ran to the end instead of being canceled"


def test_a_process_that_ignores_sigint_runs_the_playbook_to_the_end(tmp_path: Path) -> None:
    """Under nohup or in a script's background job SIGINT is ignored: a stray one must not
    cancel the playbook either (netroot ignores it everywhere else)."""
    books = tmp_path / "playbooks"
    books.mkdir()
    (books / "ansible.cfg").write_text("[defaults]\nhost_key_checking = True\n")
    marker = tmp_path / "finished"
    (books / "short.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.raw: sleep 3\n"  # raw: no Python module, no interpreter
        f"    - ansible.builtin.raw: touch {marker}\n"
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

    suite = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        outcome = run_playbook(
            RunPlan("short.yml", inventory, ()), on_event, base_dir=tmp_path / "runs",
            playbooks_dir=books,
        )  # fmt: skip
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, suite)
    assert started.is_set() and outcome.rc == 0
    assert marker.exists(), "a SIGINT the process ignores canceled the playbook"
