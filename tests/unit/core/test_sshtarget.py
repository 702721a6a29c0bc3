"""netroot's ssh command line is the one Ansible's ssh connection plugin builds for the same
inventory vars (asked of ansible-core itself), with netroot's own rules first (pure)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from netroot.errors import UsageError
from netroot.inventory import Host
from netroot.paths import project_file
from netroot.sshtarget import (
    ANSIBLE_SSH_ARGS,
    parse_ssh_config,
    ssh_argv,
    ssh_said,
    target_for,
    unreachable_meaning,
    with_config,
)

# Ansible's argv for each set of vars, from its own plugin (run apart: its config is global).
ANSIBLE_ARGV = """
import json, sys
from ansible.plugins.loader import connection_loader
from ansible.playbook.play_context import PlayContext
out = []
for vars_ in json.loads(sys.argv[1]):
    conn = connection_loader.get("ssh", PlayContext())
    conn.set_options(var_options=vars_)
    argv = conn._build_command(conn.get_option("ssh_executable"), "ssh", "HOST", "CMD")
    out.append([a.decode() for a in argv])
print(json.dumps(out))
"""
CASES: list[dict[str, Any]] = [
    {"ansible_host": "10.0.0.5"},
    {
        "ansible_host": "10.0.0.5",
        "ansible_user": "pi",
        "ansible_port": 2222,
        "ansible_ssh_private_key_file": "/keys/id ed",
        "ansible_ssh_common_args": "-o ProxyJump=jump -o 'UserKnownHostsFile=/k h'",
        "ansible_ssh_extra_args": "-4",
        "ansible_ssh_timeout": "90",
    },
    {"ansible_ssh_host": "b", "ansible_ssh_user": "u", "ansible_ssh_port": "22"},
    {"ansible_host": "c", "ansible_ssh_args": "-o ControlMaster=no", "ansible_ssh_executable": "s"},
]


def _without_control_path(argv: list[str]) -> list[str]:
    """Ansible's argv less its ControlPath under ~/.ansible/cp (netroot names its own)."""
    paths = [i for i, a in enumerate(argv) if a.startswith("ControlPath=")]
    return [a for i, a in enumerate(argv) if not paths or i not in (paths[0] - 1, paths[0])]


def test_netroots_argv_is_ansibles_for_the_same_vars_after_netroots_own_rules(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "ANSIBLE_CONFIG": str(project_file("playbooks", "ansible.cfg")),
        "ANSIBLE_HOST_KEY_CHECKING": "True",  # as netroot runs Ansible (adapters/ansible.py)
    }
    done = subprocess.run(
        [sys.executable, "-c", ANSIBLE_ARGV, json.dumps(CASES)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    for vars_, theirs in zip(CASES, json.loads(done.stdout), strict=True):
        target = target_for(Host("pi-01", vars_, frozenset()))
        ours = ssh_argv(target, "/run/nr/ab12")
        rules = ["StrictHostKeyChecking=yes", "BatchMode=yes", "LogLevel=ERROR"]
        rules += ["ControlPath=/run/nr/ab12", "ControlMaster=auto", "ControlPersist=60s"]
        assert ours[1:13] == [word for rule in rules for word in ("-o", rule)]
        ansible_part = [ours[0], *ours[13:], target.host, "CMD"]
        theirs = _without_control_path(theirs)
        theirs[-2] = target.host  # Ansible was given "HOST"
        assert ansible_part == theirs, vars_


def test_netroots_own_rules_come_first_so_nothing_later_undoes_them() -> None:
    vars_ = {
        "ansible_host": "10.0.0.5",
        "netroot_known_hosts": "/lab/known hosts",
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o ControlPath=/elsewhere",
    }
    argv = ssh_argv(target_for(Host("pi-01", vars_, frozenset())), "/run/nr/ab12")
    options = [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]
    # OpenSSH keeps the first value it reads: these are the ones in force.
    first = {o.split("=")[0]: o for o in reversed(options)}
    assert first["StrictHostKeyChecking"] == "StrictHostKeyChecking=yes"
    assert first["BatchMode"] == "BatchMode=yes"
    assert first["UserKnownHostsFile"] == 'UserKnownHostsFile="/lab/known hosts"'
    assert first["ControlPath"] == "ControlPath=/run/nr/ab12"
    assert first["ControlMaster"] == "ControlMaster=auto"
    assert first["ControlPersist"] == "ControlPersist=60s"
    assert "User" not in first and "Port" not in first  # unset: ~/.ssh/config decides


def test_bulk_transfers_neither_multiplex_nor_compress() -> None:
    argv = ssh_argv(target_for(Host("nfs-01", {"ansible_host": "10.0.0.2"}, frozenset())))
    assert "-C" not in argv
    assert argv[1:11] == [
        "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
        "-o", "ControlMaster=no", "-o", "ControlPath=none",
    ]  # fmt: skip
    assert argv[11:13] == ["-o", "Compression=no"]


def test_the_ssh_args_are_playbooks_ansible_cfgs() -> None:
    cfg = project_file("playbooks", "ansible.cfg").read_text()
    assert f"\nssh_args = {ANSIBLE_SSH_ARGS}\n" in cfg


def test_unset_user_and_port_come_from_ssh_config() -> None:
    target = target_for(Host("pi-01", {"ansible_host": "10.0.0.5"}, frozenset()))
    assert (target.user, target.port, target.where) == (None, None, "10.0.0.5")
    config = parse_ssh_config("user pi\nport 2200\nhostname 10.0.0.5\nuser other\n")
    resolved = with_config(target, config)
    assert (resolved.user, resolved.port, resolved.where) == ("pi", 2200, "pi@10.0.0.5:2200")
    given = target_for(Host("pi-01", {"ansible_user": "root", "ansible_port": 22}, frozenset()))
    assert with_config(given, config).where == "root@pi-01:22"


@pytest.mark.parametrize("port", ["ssh", 0, 70000, True])
def test_a_bad_port_names_host_and_field(port: object) -> None:
    with pytest.raises(UsageError, match="pi-01: ansible_port: expected a port number"):
        target_for(Host("pi-01", {"ansible_port": port}, frozenset()))


def test_unbalanced_quotes_in_ssh_args_name_host_and_field() -> None:
    with pytest.raises(UsageError, match="pi-01: ansible_ssh_common_args"):
        target_for(Host("pi-01", {"ansible_ssh_common_args": "-o 'X=1"}, frozenset()))


@pytest.mark.parametrize(
    ("stderr", "said", "meaning"),
    [
        (
            "ssh: connect to host jump port 22: Connection refused\r\n"
            "Connection closed by UNKNOWN port 65535\r\n",
            "ssh: connect to host jump port 22: Connection refused",
            "sshd running",
        ),
        (
            "@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\n"
            "Offending ED25519 key in /k:1\r\n"
            "Host key for 10.0.0.5 has changed and you have requested strict checking.\r\n"
            "Host key verification failed.\r\n",
            "Host key for 10.0.0.5 has changed and you have requested strict checking.",
            "ssh-keygen -R",
        ),
        (
            "No ED25519 host key is known for 10.0.0.5 and you have requested strict checking."
            "\r\nHost key verification failed.\r\n",
            "No ED25519 host key is known for 10.0.0.5 and you have requested strict checking.",
            "netroot_known_hosts",
        ),
        ("pi@10.0.0.5: Permission denied (publickey).\r\n", "pi@10.0.0.5: Permission denied", ""),
        ("", "ssh failed without a word", ""),
    ],
)
def test_the_line_that_says_why_ssh_failed_and_what_it_means(
    stderr: str, said: str, meaning: str
) -> None:
    line = ssh_said(stderr)
    assert line.startswith(said) and "\n" not in line
    assert meaning in (unreachable_meaning(line) or "")
    if not meaning:
        assert unreachable_meaning(line) is None


def test_sockets_still_waiting_for_a_first_answer_are_read_from_proc_net_tcp() -> None:
    from netroot.adapters.sshproc import syn_sent_inodes

    table = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0   "
        "     0 346 1 00000000a9b18d79 100 0 0 10 0\n"
        "   1: 01BE4E0A:C296 02BE4E0A:0016 02 00000001:00000000 01:00000A2B 00000002     0   "
        "     0 98765 2 00000000f948b224 1000 0 0 10 -1\n"
        "   2: 01BE4E0A:C298 02BE4E0A:0016 01 00000000:00000000 02:000A1B2C 00000000     0   "
        "     0 12345 2 00000000f948b225 20 4 30 10 -1\n"
    )
    assert syn_sent_inodes(table) == {"98765"}  # listening (0A) and established (01) are not
    assert syn_sent_inodes(table.splitlines()[0]) == set()
