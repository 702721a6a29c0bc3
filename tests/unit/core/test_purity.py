"""Side effects live in a short list of modules; every other module is checked.

A module may reach a process, a socket, a remote host or a device (FORBIDDEN) only when it is
in IO_MODULES: the adapters, the CLI that joins them to the rest, the virtual lab, the board
checks, the program that runs on the board, and the one module of each service room that
drives boards or a server. Every other netroot module is checked, with every import it makes
(lazy ones inside functions too) and every netroot module it imports, transitively: it cannot
reach subprocess by way of a helper. tools/house_metrics.py reads IO_MODULES from here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from netroot import bundle

PACKAGE = Path(__file__).resolve().parents[3] / "netroot"

# The code that runs on the board: the QPU program (netroot/bundle.py lists what it carries;
# test_remote.py holds them to the standard library).
BOARD_PROGRAM = tuple(
    f"netroot.qpu.{name}"
    for name in (*bundle.CORE_MODULES, *bundle.EMULATE_MODULES, *bundle.TORCH_MODULES)
)
# Prefixes: a folder, or one module.
IO_MODULES = (
    "netroot.adapters",  # Docker, SSH, ansible-runner: the side effects themselves
    "netroot.run",  # subprocess with a deadline and a clean kill
    "netroot.cli",  # the composition root: hands adapters to the rest
    # The virtual lab's side of this machine: its QEMU machines, their network, disks and
    # images (the lab's plans, recipes, renderers and state file are checked like the rest).
    "netroot.lab.host",
    # The board checks: testinfra over SSH, and the QPU program sent over it (the smoke's
    # workers, report, facts parser and its built-in checks, which reach the board only
    # through the testinfra host and the BoardShell they are handed, are checked).
    "netroot.smoke.backend",
    "netroot.smoke.plugin",
    "netroot.smoke.stages",
    "BOARD_PROGRAM",  # the QPU program, run on the board (above)
    # The one module of its room that reaches a host; the rest of the room is checked.
    "netroot.export.serverroot",  # a remote export: ssh + rsync through adapters.serverssh
    "netroot.fleet.where",  # a remote root's state and lock: a helper session over ssh
    "netroot.fleet.probe",  # the status probe's SSH round trip
    "netroot.netboot.install",  # dnsmasq --test before a config is installed
    "netroot.netboot.bootstage",  # asks each NFS server for its diskless boards' boot step
    # Run on the NFS server (sent by netroot.bundle): its NFS clients from `ss -ti`.
    "netroot.remote.bootlog",
    "netroot.provision.apply",  # runs the playbook
    "netroot.rollout.drive",  # provision + smoke on real boards, a batch at a time
    "netroot.rollout.runner",  # a rollout or rollback from plan to recorded result
)
ALLOWED = tuple(n for p in IO_MODULES for n in (BOARD_PROGRAM if p == "BOARD_PROGRAM" else (p,)))
FORBIDDEN = (
    "netroot.adapters",
    "netroot.run",
    "subprocess",
    "socket",
    "paramiko",
    "docker",
    "ansible_runner",
    "testinfra",
    "mmap",
    "multiprocessing",
)


def _file(module: str) -> Path | None:
    parts = module.split(".")[1:]
    if not parts:
        return PACKAGE / "__init__.py"
    rel = Path(*parts)
    for candidate in (PACKAGE / rel.with_suffix(".py"), PACKAGE / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(module: str) -> set[str]:
    path = _file(module)
    if path is None:
        return set()
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found |= {
                f"{base}.{alias.name}" for alias in node.names if _file(f"{base}.{alias.name}")
            }
    return found


def _closure(module: str) -> dict[str, str]:
    """Every module reachable from `module`, with the netroot module that imports it."""
    seen: dict[str, str] = {}
    todo = [module]
    while todo:
        current = todo.pop()
        for name in _imports(current):
            if name in seen:
                continue
            seen[name] = current
            if name.startswith("netroot"):
                todo.append(name)
    return seen


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _forbidden(name: str) -> bool:
    return _under(name, FORBIDDEN)


def _all_modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


CHECKED = [m for m in _all_modules() if not _under(m, ALLOWED)]


def test_most_modules_are_checked() -> None:
    """The list stays short: most of netroot is checked."""
    assert len(CHECKED) > len(_all_modules()) / 2


@pytest.mark.parametrize("prefix", ALLOWED)
def test_every_listed_module_exists(prefix: str) -> None:
    assert _file(prefix) is not None, f"{prefix} is listed as doing IO but does not exist"


@pytest.mark.parametrize("module", CHECKED)
def test_module_reaches_no_side_effect(module: str) -> None:
    reached = _closure(module)
    bad = sorted(f"{name} (imported by {by})" for name, by in reached.items() if _forbidden(name))
    assert not bad, f"{module} reaches: {', '.join(bad)} (only IO_MODULES may)"


def test_the_check_sees_a_lazy_import(tmp_path: Path) -> None:
    """The guard itself: an import inside a function is found."""
    tree = ast.parse("def f():\n    import subprocess\n")
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert any(_forbidden(n) for n in names)
    assert _forbidden("netroot.adapters.ssh") and not _forbidden("netroot.adaptersx")
