"""What Ansible itself says of an inventory: the real `ansible-inventory` and `ansible`
commands of the venv, run as a lab admin would run them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inventories"
PLAYBOOKS = Path(__file__).resolve().parents[3] / "playbooks"


@dataclass(frozen=True)
class AnsibleView:
    listed: dict[str, dict[str, Any]]  # ansible-inventory --list: hostvars as written
    rendered: dict[str, dict[str, Any]]  # ansible HOST -m debug: hostvars as a play sees them
    groups: dict[str, set[str]]  # every group and every host under it


def _run(argv: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{argv[0]} failed: {done.stderr}"
    return done.stdout


def _members(listed: dict[str, Any], group: str) -> set[str]:
    node = listed.get(group, {})
    found = set(node.get("hosts", []))
    for child in node.get("children", []):
        found |= _members(listed, child)
    return found


def ansible_view(inventory: Path, playbook_dir: Path, env: dict[str, str]) -> AnsibleView:
    common = ["-i", str(inventory), "--playbook-dir", str(playbook_dir)]
    listed = json.loads(_run([str(BIN / "ansible-inventory"), *common, "--list"], env))
    # The ad hoc debug action runs on the control host (no connection) and renders each
    # variable as a task gets it (the vars lookup). Its default (minimal) output is
    # "HOST | SUCCESS => {json}" per host.
    names = sorted({k for hostvars in listed["_meta"]["hostvars"].values() for k in hostvars})
    msg = (
        "{{ dict(netroot_test_names | zip(query('ansible.builtin.vars', *netroot_test_names,"
        " default='<unset>'))) }}"
    )
    out = _run(
        [str(BIN / "ansible"), "all", *common, "-m", "debug", "-a", json.dumps({"msg": msg}),
         "-e", json.dumps({"netroot_test_names": names})],
        {**env, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_DEPRECATION_WARNINGS": "0"},
    )  # fmt: skip
    rendered: dict[str, dict[str, Any]] = {}
    for host, body in re.findall(r"^(\S+) \| SUCCESS => (\{.*?^\})$", out, re.M | re.S):
        rendered[host] = json.loads(body)["msg"]
    groups = {g: _members(listed, g) for g in listed if g != "_meta"}
    return AnsibleView(listed["_meta"]["hostvars"], rendered, groups)


def is_template_or_vault(value: Any) -> bool:
    if isinstance(value, dict):
        return "__ansible_vault" in value or any(is_template_or_vault(v) for v in value.values())
    if isinstance(value, list):
        return any(is_template_or_vault(v) for v in value)
    return isinstance(value, str) and ("{{" in value or "{%" in value)
