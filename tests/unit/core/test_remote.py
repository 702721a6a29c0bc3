"""Code that runs away from the control host imports only the standard library and its own
package: the NFS server and the boards have Python, not netroot's dependencies.

Every import counts, lazy ones inside functions too.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from netroot.export.remote import LIB_MODULES
from netroot.qpu.bundle import CORE_MODULES, EMULATE_MODULES

PACKAGE = Path(__file__).resolve().parents[3] / "netroot"
# Shipped beside netroot/remote (files/netroot-lib): stdlib-only themselves.
REMOTE_BASE = ("netroot", "netroot.errors", "netroot.fsutil")
REMOTE = sorted(p for p in (PACKAGE / "remote").glob("*.py"))
# The export's and the fleet's helpers (remote/export.py, remote/fleet.py) also read and
# write the export tree's manifests: these export modules ship with them (export/remote.py
# LIB_MODULES, at every use), stdlib-only and importing one another only.
EXPORT_SHARED = tuple(
    "netroot." + m.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    for m in LIB_MODULES
    if m.startswith("export/")
)
# rsynced by export/remote.ship_helper at each use (test_export_remote_helper checks its list)
SHIPPED_AT_USE = {"export.py", "fleet.py", "lock.py"}
BOARD = [PACKAGE / "qpu" / f"{name}.py" for name in (*CORE_MODULES, *EMULATE_MODULES)]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.add("<relative>")  # the shipped copies are loaded by absolute name
            elif node.module:
                found.add(node.module)
    return found


def _foreign(path: Path, own: tuple[str, ...]) -> list[str]:
    def allowed(name: str) -> bool:
        top = name.partition(".")[0]
        if top in sys.stdlib_module_names:
            return True
        return any(name == o or name.startswith(o + ".") for o in own)

    return sorted(n for n in _imports(path) if not allowed(n))


@pytest.mark.parametrize("path", REMOTE, ids=lambda p: p.name)
def test_server_side_code_imports_stdlib_and_its_own_package_only(path: Path) -> None:
    assert _foreign(path, ("netroot.remote", *REMOTE_BASE[1:], *EXPORT_SHARED)) == []


@pytest.mark.parametrize("name", EXPORT_SHARED)
def test_the_export_modules_the_helpers_use_import_stdlib_and_each_other_only(name: str) -> None:
    rel = name.split(".")[1:]
    path = PACKAGE.joinpath(*rel).with_suffix(".py")
    if not path.is_file():
        path = PACKAGE.joinpath(*rel) / "__init__.py"
    assert _foreign(path, (*REMOTE_BASE[1:], *EXPORT_SHARED)) == []


@pytest.mark.parametrize("name", REMOTE_BASE[1:])
def test_what_ships_beside_it_is_stdlib_only(name: str) -> None:
    path = PACKAGE / f"{name.rpartition('.')[2]}.py"
    assert _foreign(path, ()) == []


@pytest.mark.parametrize("path", BOARD, ids=lambda p: p.name)
def test_the_board_program_imports_stdlib_and_its_own_package_only(path: Path) -> None:
    assert _foreign(path, ("netroot.qpu",)) == []


def test_the_rule_sees_a_foreign_import(tmp_path: Path) -> None:
    """The guard itself: a lazy third-party import is caught, the stdlib is not."""
    probe = tmp_path / "probe.py"
    lazy = "import json\n\ndef f():\n    import yaml\n    from netroot import inventory\n"
    probe.write_text(lazy)
    assert _foreign(probe, ("netroot.remote",)) == ["netroot", "yaml"]
    probe.write_text("from netroot.remote import tree\nfrom . import uboot\n")
    assert _foreign(probe, ("netroot.remote",)) == ["<relative>"]


def test_every_server_side_module_is_shipped() -> None:
    lib = PACKAGE.parent / "playbooks/roles/netroot_nfs_server/files"
    shipped = {p.name for p in (lib / "netroot-lib/netroot/remote").glob("*.py")}
    assert shipped | {"nfs_check.py"} | SHIPPED_AT_USE == {p.name for p in REMOTE}
    assert (lib / "netroot-nfs-check").resolve() == PACKAGE / "remote" / "nfs_check.py"
