"""A busy host is not a dead one: with netroot's ansible.cfg, a sudo that answers late once is
tried again and the run succeeds; one that stays silent is reported as busy, with the inventory
settings that give it more time. Real sshd (in a netns), real ansible-runner; the slowness is a
become executable that waits before it runs the command (a loaded board's sudo, on demand)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot.adapters.ansible import run_playbook
from netroot.errors import Exit
from netroot.paths import project_file
from netroot.provision.plan import RunPlan
from netroot.provision.progress import Summary
from tests.integration.provision_hosts import NEEDS_HOSTS, NetnsHost, netns_host

pytestmark = NEEDS_HOSTS

# Called as Ansible calls sudo (`-H -S -n -u USER /bin/sh -c 'echo BECOME-SUCCESS-...; python3'`):
# logs the call, stays silent for $1's seconds while the marker $2 is absent (the first call
# creates it when ONCE is set), then runs the command as the login user.
SLOW_SUDO = """#!/bin/sh
echo call >> {log}
if [ ! -e {marker} ]; then
    {once}
    sleep {delay}
fi
while [ "$#" -gt 0 ] && [ "$1" != /bin/sh ]; do shift; done
exec "$@"
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("netns")) as h:
        yield h


def _run(
    host: NetnsHost, tmp: Path, *, once: bool, delay: int = 8, **host_vars: Any
) -> tuple[Summary, int]:
    """One become task on the host through netroot's own ansible.cfg; its summary and calls."""
    books = tmp / "playbooks"
    books.mkdir(exist_ok=True)
    shutil.copy(project_file("playbooks", "ansible.cfg"), books / "ansible.cfg")
    (books / "become.yml").write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - name: Run as root\n      ansible.builtin.command: 'true'\n"
        "      changed_when: false\n"
    )
    log, marker = tmp / "calls", tmp / "answered"
    log.unlink(missing_ok=True)
    marker.unlink(missing_ok=True)
    sudo = tmp / "slow-sudo"
    once_cmd = f"touch {marker}" if once else ":"
    sudo.write_text(SLOW_SUDO.format(log=log, marker=marker, once=once_cmd, delay=delay))
    sudo.chmod(0o755)
    inventory = tmp / "inventory.yml"
    host_entry = {
        "ansible_host": host.address,
        **host.inventory_vars(),
        "ansible_become": True,
        "ansible_become_user": "nobody",  # another user, so Ansible escalates at all
        "ansible_become_exe": str(sudo),
        "ansible_ssh_timeout": 2,  # sudo may stay silent 4 s (Ansible adds 2)
        **host_vars,
    }
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"srv": host_entry}}}))
    summary = Summary()
    run_playbook(
        RunPlan("become.yml", inventory, ()), summary.apply, base_dir=tmp / "runs",
        playbooks_dir=books,
    )  # fmt: skip
    return summary, len(log.read_text().splitlines()) if log.exists() else 0


def test_a_sudo_that_answers_late_once_is_tried_again(host: NetnsHost, tmp_path: Path) -> None:
    summary, calls = _run(host, tmp_path, once=True)
    assert summary.exit_code == Exit.OK, summary.as_dict()
    assert summary.hosts["srv"].state == "ok"
    assert calls == 2  # the silent one, then the retry ansible.cfg's `retries` asked for


def test_without_retries_the_late_sudo_is_unreachable_and_says_why(
    host: NetnsHost, tmp_path: Path
) -> None:
    summary, calls = _run(host, tmp_path, once=True, ansible_ssh_retries=0)
    assert calls == 1
    assert summary.exit_code == Exit.UNREACHABLE
    [failure] = summary.failures
    assert failure.unreachable and failure.host == "srv"
    assert "sudo gave no answer within 4 s" in failure.message, failure
    assert "busy" in failure.message and "ansible_ssh_timeout" in failure.message


def test_a_sudo_that_stays_silent_is_unreachable_after_every_try(
    host: NetnsHost, tmp_path: Path
) -> None:
    summary, calls = _run(host, tmp_path, once=False)
    assert calls == 3  # the first try and ansible.cfg's two retries
    assert summary.hosts["srv"].state == "unreachable"
    assert "sudo gave no answer within 4 s" in summary.failures[0].message


def test_a_longer_timeout_lets_the_slow_sudo_answer(host: NetnsHost, tmp_path: Path) -> None:
    summary, calls = _run(host, tmp_path, once=False, ansible_ssh_timeout=12, ansible_ssh_retries=0)
    assert calls == 1
    assert summary.exit_code == Exit.OK, summary.as_dict()


def test_a_host_gone_while_its_connection_is_held_is_not_called_busy(
    host: NetnsHost, tmp_path: Path
) -> None:
    """A board powered off after a task: Ansible's ControlPersist master still holds its
    connection, and a session through it hangs. With ansible.cfg's keepalives the master gives
    up first, so the board is reported as gone, not as a busy board whose sudo is silent (which
    each of the 3 tries would wait 32 s for)."""
    summary, calls = _run(host, tmp_path, once=False, delay=0, ansible_ssh_timeout=30)
    assert summary.exit_code == Exit.OK and calls == 1, summary.as_dict()  # the master is up
    host.exec("ip", "link", "set", "eth0", "down")  # pull the plug: no RST, no answer at all
    try:
        summary, calls = _run(
            host, tmp_path, once=False, delay=0, ansible_ssh_timeout=30, ansible_ssh_retries=0
        )
    finally:
        host.exec("ip", "link", "set", "eth0", "up")
    assert calls == 0
    assert summary.hosts["srv"].state == "unreachable", summary.as_dict()
    [failure] = summary.failures
    assert "sudo gave no answer" not in failure.message, failure
