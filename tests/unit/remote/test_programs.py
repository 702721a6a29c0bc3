"""Code that runs away from the control host imports only the standard library and its own
package: the NFS server and the boards have Python, not netroot's dependencies.

Every import counts, lazy ones inside functions too. The server role's two programs are
committed files: here too the proof that they are what netroot.bundle makes today
(NETROOT_UPDATE_GOLDEN=1 rewrites them) and that they run in a bare python3.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netroot import bundle

PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"
PACKAGE = Path(__file__).resolve().parents[3] / "netroot"
ROLE_FILES = PACKAGE.parent / "playbooks/roles/netroot_nfs_server/files"
# netroot.errors and netroot.fsutil: stdlib-only, carried by the server's programs.
REMOTE_BASE = ("netroot", "netroot.errors", "netroot.fsutil")
REMOTE = sorted(p for p in (PACKAGE / "remote").glob("*.py"))
QPU_PROGRAMS = ("qpu", "torch script")
# Every program netroot.bundle makes: the server's (sent at run time or installed by the role)
# and the QPU programs.
SENT = {
    **{m.rpartition(".")[2]: names for m, names in bundle.SERVER_PROGRAMS.items()},
    "qpu": (
        *bundle.SMOKE_BASE,
        *bundle.qpu((*bundle.CORE_MODULES, *bundle.EMULATE_MODULES, *bundle.TORCH_MODULES)),
    ),
    "torch script": bundle.qpu(
        (*bundle.SCRIPT_MODULES, *bundle.EMULATE_MODULES, *bundle.TORCH_MODULES)
    ),
}


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
    if program in QPU_PROGRAMS:  # the torch modules load last, from S12/S13
        before = (bundle.LOADER, *names)
    # torch: the one import beyond, made only once S12 has seen `import torch` work
    torch = {"torch"} if name in bundle.qpu(bundle.TORCH_MODULES) else set()
    assert {n.partition(".")[0] for n in _foreign(bundle.path(name), before)} == torch


@pytest.mark.parametrize("program", SENT)
def test_each_program_runs_with_the_system_python_alone(program: str, tmp_path: Path) -> None:
    """Loaded by the loader in a python3 -I -S: nothing of netroot, no site-packages."""
    names = [
        bundle.LOADER,
        *(n for n in SENT[program] if n not in bundle.qpu(bundle.TORCH_MODULES)),
    ]
    probe = "import sys\nprint(' '.join(sorted(n for n in sys.modules if '.' in n)))"
    text = bundle.program("probe", names, probe)
    done = subprocess.run(
        [PYTHON, "-I", "-S", "-"], input=text, capture_output=True, text=True, cwd=tmp_path,
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


def test_every_server_side_module_is_in_a_server_program() -> None:
    """netroot/remote/ holds what runs on the server and nothing else: each module is carried
    by a program of netroot.bundle.SERVER_PROGRAMS (or is the loader, or the package's
    docstring), and the server role ships nothing but the programs bundle.py makes."""
    carried = {n for names in bundle.SERVER_PROGRAMS.values() for n in names}
    in_remote = {bundle.path(n).name for n in carried if n.startswith("netroot.remote.")}
    assert in_remote | {"loader.py", "__init__.py"} == {p.name for p in REMOTE}
    assert all(m in names for m, names in bundle.SERVER_PROGRAMS.items())
    assert sorted(p.name for p in ROLE_FILES.iterdir()) == sorted(bundle.ROLE_PROGRAMS)
    assert [p for p in ROLE_FILES.iterdir() if p.is_symlink() or not p.is_file()] == []


@pytest.mark.parametrize("name", sorted(bundle.ROLE_PROGRAMS))
def test_the_role_ships_the_program_bundle_makes_today(name: str) -> None:
    """The role's copy is server_program's text byte for byte (what the ssh transport sends
    for a helper). After a change to a module it carries, rewrite it with
    `NETROOT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/remote/test_programs.py` and commit it."""
    text = bundle.server_program(bundle.ROLE_PROGRAMS[name])
    shipped = ROLE_FILES / name
    if os.environ.get("NETROOT_UPDATE_GOLDEN"):
        shipped.write_text(text)
        shipped.chmod(0o755)
    assert shipped.read_text() == text, f"{shipped} is not today's: regenerate it (see above)"


def _run_role_program(name: str, args: list[str], stdin: str, cwd: Path) -> tuple[int, str]:
    # -I -S: no PYTHON* variables, no site-packages (where netroot is installed), no script or
    # current directory on the path; from an empty directory: the standard library alone.
    done = subprocess.run(
        [PYTHON, "-I", "-S", str(ROLE_FILES / name), *args], input=stdin, capture_output=True,
        text=True, cwd=cwd, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_the_role_programs_run_with_the_standard_library_alone(tmp_path: Path) -> None:
    """Each committed file runs in a bare python3 and does its work (the TFTP tool's full run,
    a tree applied, is in tests/unit/netboot/test_switch.py)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    exports = tmp_path / "exports"
    exports.write_text("/srv/netroot/a 10.0.0.1(ro)\n/srv/netroot/b *(rw)\n")
    rc, out = _run_role_program("netroot-nfs-check", ["exports", str(exports)], "", empty)
    assert rc == 0, out
    exports.write_text("/srv/netroot/a 10.0.0.1(ro\n")
    rc, out = _run_role_program("netroot-nfs-check", ["exports", str(exports)], "", empty)
    assert rc == 1 and out.startswith(f"{exports}: line 1"), out
    rc, out = _run_role_program("netroot-tftp", ["--check"], "[]", empty)
    assert (rc, out.count("\n")) == (1, 1) and out.startswith(
        "netroot-tftp: request: expected {'root'"
    )
    assert list(empty.iterdir()) == []
