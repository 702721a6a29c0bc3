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

    # Whatever handler the suite started with (Python's default, or SIG_IGN under nohup or
    # in a background job) is the one run_playbook must put back.
    before = signal.getsignal(signal.SIGINT)
    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_playbook(
            RunPlan("slow.yml", inventory, ()), on_event, base_dir=tmp_path / "runs",
            playbooks_dir=books,
        )  # fmt: skip
    assert started.is_set()
    assert not marker.exists(), "the playbook ran to the end instead of being canceled"
    assert signal.getsignal(signal.SIGINT) is before  # the previous handler is restored
