"""Code that runs away from the control host imports only the standard library and its own
package: the NFS server and the boards have Python, not netroot's dependencies.

Every import counts, lazy ones inside functions too.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netroot import bundle

PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"
PACKAGE = Path(__file__).resolve().parents[3] / "netroot"
# The role's files (tree, switch, uboot in files/netroot-lib, nfs_check): stdlib-only and
# netroot.errors/fsutil, shipped beside them.
REMOTE_BASE = ("netroot", "netroot.errors", "netroot.fsutil")
REMOTE = sorted(p for p in (PACKAGE / "remote").glob("*.py"))
# Everything netroot.bundle sends at run time: the server's helpers and the QPU programs.
SENT = {
    "helpers": bundle.HELPER_MODULES,
    "qpu": bundle.qpu((*bundle.CORE_MODULES, *bundle.EMULATE_MODULES, *bundle.TORCH_MODULES)),
    "torch script": bundle.qpu(
        (*bundle.SCRIPT_MODULES, *bundle.EMULATE_MODULES, *bundle.TORCH_MODULES)
    ),
}
# In the role's library (the rest of netroot/remote is sent at run time, or is the checker).
ROLE_LIB = {"tree.py", "switch.py", "uboot.py", "__init__.py"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.add("<relative>")  # the shipped copies are loaded by absolute name
            elif node.module:  # `from a.b import c`: a.b.c when c is a module
                found |= {f"{node.module}.{a.name}" for a in node.names}
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
    assert _foreign(path, ("netroot.remote", *REMOTE_BASE[1:], *bundle.HELPER_MODULES)) == []


@pytest.mark.parametrize("name", REMOTE_BASE[1:])
def test_what_ships_beside_it_is_stdlib_only(name: str) -> None:
    path = PACKAGE / f"{name.rpartition('.')[2]}.py"
    assert _foreign(path, ()) == []


@pytest.mark.parametrize(("program", "name"), [(p, n) for p, ns in SENT.items() for n in ns])
def test_what_is_sent_imports_stdlib_and_what_is_sent_before_it_only(
    program: str, name: str
) -> None:
    """Every module a program carries: the standard library and the modules loaded before it
    (the loader registers them in order), nothing else, lazy imports included."""
    names = SENT[program]
    before = names[: names.index(name)]
    if program != "helpers":  # a QPU program: the torch modules load last, from S12/S13
        before = (bundle.LOADER, *names)
    # torch: the one import beyond, made only once S12 has seen `import torch` work
    torch = {"torch"} if name in bundle.qpu(bundle.TORCH_MODULES) else set()
    assert {n.partition(".")[0] for n in _foreign(bundle.path(name), before)} == torch


@pytest.mark.parametrize("program", SENT)
def test_each_program_runs_with_the_system_python_alone(program: str, tmp_path: Path) -> None:
    """Loaded by the loader in a python3 -I with nothing of netroot on its path."""
    names = [
        bundle.LOADER,
        *(n for n in SENT[program] if n not in bundle.qpu(bundle.TORCH_MODULES)),
    ]
    probe = "import sys\nprint(' '.join(sorted(n for n in sys.modules if '.' in n)))"
    text = bundle.program("probe", names, probe)
    done = subprocess.run(
        [PYTHON, "-I", "-"], input=text, capture_output=True, text=True, cwd=tmp_path,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    loaded = {n for n in done.stdout.split() if n.startswith("netroot.")}
    packages = {n.rpartition(".")[0] for n in names if n.count(".") > 1}
    assert loaded == {*names, *packages}


def test_the_rule_sees_a_foreign_import(tmp_path: Path) -> None:
    """The guard itself: a lazy third-party import is caught, the stdlib is not."""
    probe = tmp_path / "probe.py"
    lazy = "import json\n\ndef f():\n    import yaml\n    from netroot import inventory\n"
    probe.write_text(lazy)
    assert _foreign(probe, ("netroot.remote",)) == ["netroot.inventory", "yaml"]
    probe.write_text("from netroot.remote import tree\nfrom . import uboot\n")
    assert _foreign(probe, ("netroot.remote",)) == ["<relative>"]


def test_every_server_side_module_is_shipped_one_way() -> None:
    lib = PACKAGE.parent / "playbooks/roles/netroot_nfs_server/files"
    in_role = {p.name for p in (lib / "netroot-lib/netroot/remote").glob("*.py")}
    assert in_role == ROLE_LIB
    sent = {bundle.path(n).name for n in (*bundle.HELPER_MODULES, bundle.LOADER)}
    sent = {n for n in sent if (PACKAGE / "remote" / n).is_file()}
    assert in_role | {"nfs_check.py"} | sent == {p.name for p in REMOTE}
    assert not in_role & sent
    assert (lib / "netroot-nfs-check").resolve() == PACKAGE / "remote" / "nfs_check.py"
