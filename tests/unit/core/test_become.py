"""become: Ansible's connection vars -> how netroot runs privileged commands (pure)."""

from __future__ import annotations

import shlex
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from netroot.adapters.become import BecomeRefused, become_problem, check_privileges, sudo_refused
from netroot.errors import UsageError
from netroot.inventory import Host
from netroot.sshtarget import SshTarget, target_for


def _target(**vars_: Any) -> SshTarget:
    return target_for(Host("pi-01", {"ansible_host": "10.0.0.5", **vars_}, frozenset()))


def test_root_inventories_run_commands_as_they_are() -> None:
    t = _target(ansible_user="root")
    assert not t.sudo and t.privileged_ok
    assert t.privileged("cat /etc/x") == "cat /etc/x"
    assert become_problem(t, None, "") is None
    # become as root while root: nothing to wrap either
    assert _target(ansible_user="root", ansible_become=True).privileged("id") == "id"


@pytest.mark.parametrize("flag", [True, "true", "yes", "True", 1, "on"])
def test_become_wraps_in_sudo_n_and_keeps_the_command_whole(flag: object) -> None:
    t = _target(ansible_user="pi", ansible_become=flag)
    assert t.sudo
    line = t.privileged("cat '/etc/a b' | wc -l")
    words = shlex.split(line)
    assert words[:6] == ["sudo", "-n", "-H", "-u", "root", "--"]
    assert words[6:8] == ["/bin/sh", "-c"] and words[8] == "cat '/etc/a b' | wc -l"


def test_become_user_is_honoured_but_must_be_root_for_netroot() -> None:
    t = _target(ansible_user="pi", ansible_become=True, ansible_become_user="ops")
    assert "-u ops" in t.privileged("id")
    problem = become_problem(t, None, "")
    assert problem is not None and "ansible_become_user" in problem


def test_non_root_user_without_become_is_told_what_to_set() -> None:
    problem = become_problem(_target(ansible_user="pi"), None, "")
    assert problem is not None
    assert "pi@10.0.0.5" in problem and "ansible_become: true" in problem


def test_sudo_asking_for_a_password_is_one_line_naming_user_and_remedy() -> None:
    t = _target(ansible_user="student", ansible_become="yes")
    problem = become_problem(t, 1, "sudo: a password is required\n")
    assert problem is not None and "\n" not in problem
    assert "student@10.0.0.5" in problem and "a password is required" in problem
    assert "NOPASSWD" in problem
    assert become_problem(t, 0, "") is None


def test_a_refusal_is_told_from_the_command_failing_by_sudos_own_words() -> None:
    t = _target(ansible_user="pi", ansible_become=True)
    refused = sudo_refused(t, 1, "sudo: a password is required\n")
    assert refused is not None and "pi@10.0.0.5 cannot sudo without a password" in refused
    missing = sudo_refused(t, 127, "bash: line 1: sudo: command not found\n")
    assert missing is not None and "command not found" in missing
    # sudo ran it; the command itself failed (smoke's `test -x`): not a refusal
    assert sudo_refused(t, 1, "") is None
    assert sudo_refused(t, 2, "cat: /etc/x: No such file or directory\n") is None
    assert sudo_refused(t, 0, "sudo: unable to resolve host pi-01\n") is None
    # root logins have no sudo to refuse them
    assert sudo_refused(_target(ansible_user="root"), 1, "sudo: a password is required") is None


def test_other_become_methods_and_bad_booleans_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="ansible_become_method 'su'"):
        _target(ansible_user="pi", ansible_become=True, ansible_become_method="su")
    with pytest.raises(UsageError, match="pi-01: ansible_become"):
        _target(ansible_become="maybe")


def test_hosts_proven_by_a_sudo_n_just_run_are_not_asked_again(tmp_path: Path) -> None:
    """A real listening socket counts connection attempts (each is closed at once)."""
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    attempts: list[int] = []
    with socket.create_server(("127.0.0.1", 0)) as server:

        def accept() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                attempts.append(1)
                conn.close()

        threading.Thread(target=accept, daemon=True).start()
        vars_ = {"ansible_port": server.getsockname()[1], "netroot_known_hosts": str(known_hosts)}
        t = _target(ansible_user="pi", ansible_become=True, **vars_)
        t = SshTarget(**{**t.__dict__, "host": "127.0.0.1"})
        check_privileges([t], proven={"pi-01"})
        assert attempts == []
        check_privileges([t])  # asked: one connection (refused here, left to the operation)
        assert attempts == [1]
        # A proven host is still held to its configuration: netroot needs root.
        ops = SshTarget(**{**t.__dict__, "become_user": "ops"})
        with pytest.raises(BecomeRefused, match="ansible_become_user"):
            check_privileges([ops], proven={"pi-01"})
        assert attempts == [1]


def test_ssh_timeout_and_retries_default_to_ansible_cfgs_and_follow_the_inventory() -> None:
    from netroot.paths import project_file

    cfg = project_file("playbooks", "ansible.cfg").read_text()
    t = _target(ansible_user="pi")
    assert f"\ntimeout = {t.timeout:g}\n" in cfg and f"\nretries = {t.retries}\n" in cfg
    slow = _target(ansible_user="pi", ansible_ssh_timeout="90", ansible_ssh_retries=5)
    assert (slow.timeout, slow.retries) == (90.0, 5)


@pytest.mark.parametrize(
    ("field", "value"),
    [("ansible_ssh_timeout", "soon"), ("ansible_ssh_timeout", 0), ("ansible_ssh_retries", -1)],
)
def test_a_bad_ssh_timeout_or_retries_names_host_and_field(field: str, value: object) -> None:
    with pytest.raises(UsageError) as err:
        _target(ansible_user="pi", **{field: value})
    assert err.value.message.startswith(f"pi-01: {field}: expected a number")
