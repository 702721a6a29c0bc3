"""The table of netroot_* names is complete: every name the code, the playbooks and the
templates read is declared (or declared no variable), and the roles' defaults agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from netroot.inventory.variables import BY_NAME, NOT_VARIABLES, SCOPES, VARIABLES

ROOT = Path(__file__).resolve().parents[3]
# A name, not a prefix being built ("netroot_dnsmasq_" + field) nor a longer identifier
# (test_netroot_builtin.py, self._netroot_facts).
NAME = re.compile(r"(?<![A-Za-z0-9_])netroot_[a-z0-9_]*[a-z0-9](?![A-Za-z0-9_])")
SOURCES = ("netroot", "playbooks", "templates")
SUFFIXES = {".py", ".yml", ".yaml", ".j2", ".cfg", ""}


def _names_in_sources() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or path.suffix not in SUFFIXES:
                continue
            if path.parent.name == "inventory" and path.name == "variables.py":
                continue  # the table itself
            for name in NAME.findall(path.read_text(errors="replace")):
                found.setdefault(name, path)
    return found


def test_every_name_read_is_declared() -> None:
    found = _names_in_sources()
    assert len(found) > 50  # the grep sees the code
    missing = {n: str(p.relative_to(ROOT)) for n, p in found.items()
               if n not in BY_NAME and n not in NOT_VARIABLES}  # fmt: skip
    assert not missing, f"add to netroot/inventory/variables.py: {missing}"


def test_every_declared_name_is_read_somewhere() -> None:
    found = _names_in_sources()
    assert not [v.name for v in VARIABLES if v.name not in found]
    assert not [n for n in NOT_VARIABLES if n not in found]


@pytest.mark.parametrize("role, scope", [("netroot_board", "board-role"),
                                         ("netroot_nfs_server", "server-role")])  # fmt: skip
def test_role_defaults_are_declared_with_their_scope(role: str, scope: str) -> None:
    defaults = yaml.safe_load((ROOT / "playbooks/roles" / role / "defaults/main.yml").read_text())
    assert defaults
    wrong = {n: BY_NAME[n].scope if n in BY_NAME else None for n in defaults
             if n not in BY_NAME or BY_NAME[n].scope != scope}  # fmt: skip
    assert not wrong
    declared = {v.name for v in VARIABLES if v.scope == scope}
    assert declared == set(defaults)


def test_role_vars_are_internal() -> None:
    for role in ("netroot_board", "netroot_nfs_server"):
        role_vars = yaml.safe_load((ROOT / "playbooks/roles" / role / "vars/main.yml").read_text())
        assert {BY_NAME[n].scope for n in role_vars} == {"internal"}, role


def test_each_row_is_whole() -> None:
    assert len(BY_NAME) == len(VARIABLES)  # no name twice
    for v in VARIABLES:
        assert v.scope in SCOPES and v.default and v.meaning, v
        assert NAME.fullmatch(v.name), v
