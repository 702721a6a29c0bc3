"""Each bad inventory a lab admin can hand netroot: one line naming what is wrong (and a hint),
exit 2, no traceback, nothing written; through the real CLI, whose `versions` reads the
inventory before anything else and touches no host."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from netroot.errors import Exit
from tests.unit.inventory.ansiblekit import FIXTURES

ROOT = Path(__file__).resolve().parents[3]
VAULT = FIXTURES / "vault"
SERVER = "    nfs_servers:\n      hosts:\n        srv: {ansible_host: 10.0.0.2}\n"


def _yaml(text: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        (tmp / "inv.yml").write_text(text)
        return tmp / "inv.yml"

    return make


def _file(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        (tmp / name).write_bytes(data)
        return tmp / name

    return make


def _missing(tmp: Path) -> Path:
    return tmp / "nope.yml"


def _empty_dir(tmp: Path) -> Path:
    (tmp / "inv").mkdir()
    return tmp / "inv"


def _dir_with_junk(tmp: Path) -> Path:
    shutil.copytree(FIXTURES / "duplicate", tmp / "inv")
    (tmp / "inv" / "notes").write_bytes(b"\x00\xff\xfe junk")
    return tmp / "inv"


def _vault(tmp: Path) -> Path:
    return VAULT / "hosts.yml"


BOARD = "all:\n  children:\n" + SERVER + "    boards:\n      hosts:\n        pi-01: "
# (inventory, environment, what the one error line must say)
ROWS: dict[str, tuple[Callable[[Path], Path], dict[str, str | None], str]] = {
    "missing": (_missing, {}, "inventory .*nope.yml not found"),
    "empty file": (_file("inv.yml", b""), {}, "inv.yml: no hosts in it"),
    "empty directory": (_empty_dir, {}, "inv: no hosts in it"),
    "no hosts, a key Ansible skipped": (
        _yaml("all:\n  children:\n  boards:\n    hosts:\n      pi-01: {}\n"), {},
        r"inv.yml: no hosts in it \(Skipping unexpected key \(boards\) in group \(all\)",
    ),
    "binary": (_file("inv.yml", b"\x00\x01\xff\xfe\x89PNG\r\n"), {},
               "inv.yml: not an inventory: binary or not UTF-8"),
    "binary in a directory": (_dir_with_junk, {}, "notes: not an inventory: binary"),
    "broken YAML": (_file("inv.yml", b"all: [\n"), {},
                    r"inv.yml: not a YAML inventory Ansible can read: .*\(.*inv.yml:2\)"),
    "YAML, not an inventory": (_file("inv.yml", b"- a\n- b\n"), {},
                               "not a YAML inventory Ansible can read: .*dictionary"),
    "INI garbage": (_file("inv.ini", b"[boards\npi-01 ansible_host\n"), {},
                    "inv.ini: not an INI inventory Ansible can read"),
    "vault without its password": (_vault, {"ANSIBLE_VAULT_PASSWORD_FILE": None},
                                   "group_vars/boards.yml: A vault password must be specified"),
    "vault password file missing": (_vault, {"ANSIBLE_VAULT_PASSWORD_FILE": "/nonexistent/pw"},
                                    "vault password file /nonexistent/pw was not found"),
    "wrong vault password": (_vault, {"ANSIBLE_VAULT_PASSWORD_FILE": str(ROOT / "README.md")},
                             "Decryption failed"),
    "template Ansible cannot render": (
        _yaml(BOARD + '{ansible_host: 10.0.0.11, netroot_address: "{{ nope }}"}\n'), {},
        r"inv.yml:\d+: host pi-01: netroot_address: Ansible cannot render it: 'nope' is undefined",
    ),
    "INI flag as a string": (
        _file("inv.ini", b"[boards]\npi-01 ansible_host=10.0.0.11\n"
                         b"[boards:vars]\nnetroot_qpu=true\n"),
        {}, "host pi-01: netroot_qpu = 'true': expected true or false",
    ),
    "not an address": (_yaml(BOARD + "{ansible_host: pi.example}\n"), {},
                       "host pi-01: netroot_address = 'pi.example': expected an IP address"),
}  # fmt: skip


def netroot(
    *args: str, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """python -m netroot ARGS; an env value of None unsets that variable."""
    full: dict[str, str | None] = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "netroot", *args],
        env={k: v for k, v in full.items() if v is not None},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("row", list(ROWS))
def test_one_line_exit_2(row: str, tmp_path: Path) -> None:
    make, env, said = ROWS[row]
    inventory = make(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    home = tmp_path.parent / f"{tmp_path.name}-home"
    done = netroot("-i", str(inventory), "versions", "raspbian",
                   env={**env, "NETROOT_HOME": str(home)})  # fmt: skip
    assert done.returncode == Exit.USAGE, done.stderr
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    assert lines[0].startswith("error: ") and len(lines) <= 2, done.stderr
    assert lines[1:] == [] or lines[1].startswith("hint: ")
    assert re.search(said, lines[0]), lines[0]
    assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert not home.exists()


def test_warnings_reach_stderr_with_file_and_line(tmp_path: Path) -> None:
    done = netroot("-i", str(FIXTURES / "duplicate"), "versions", "raspbian",
                   env={"NETROOT_HOME": str(tmp_path / "home")})  # fmt: skip
    b = FIXTURES / "duplicate" / "b.yml"
    assert f"netroot.inventory: {b}:10: Found duplicate mapping key 'pi-02'." in done.stderr
    assert f"{b}:12: netroot_imgae is not a netroot variable" in done.stderr


def test_help_does_not_import_ansible() -> None:
    """`netroot --help` stays instant: ansible-core is imported only to read an inventory."""
    probe = (
        "import sys\nfrom netroot.cli import main\nmain._register()\n"
        "print(sorted(m for m in sys.modules if m == 'ansible' or m.startswith('ansible.')))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], env=env,
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"
