"""The pure core imports no adapter and nothing that reaches a process, socket or daemon.

Every import in a pure module counts (lazy ones inside functions too), and so does every
netroot module it imports, transitively: a pure module cannot reach subprocess by way of a
helper.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "netroot"

PURE = (
    "netroot.inventory",
    "netroot.export.manifest",
    "netroot.export.members",
    "netroot.rollout.plan",
    "netroot.fleet.desired",
    "netroot.fleet.outcome",
    "netroot.provision.plan",
    "netroot.templating",
    "netroot.remote.nfs_check",
    "netroot.netboot.cmdline",
    "netroot.netboot.dnsmasq",
    "netroot.smoke.report",
    "netroot.qpu.asm",
    "netroot.qpu.kernels",
)
FORBIDDEN = ("netroot.adapters", "subprocess", "socket", "paramiko", "docker", "ansible_runner")


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


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


@pytest.mark.parametrize("module", PURE)
def test_pure_module_reaches_no_side_effect(module: str) -> None:
    assert _file(module) is not None, f"{module} is listed as pure but does not exist"
    reached = _closure(module)
    bad = sorted(f"{name} (imported by {by})" for name, by in reached.items() if _forbidden(name))
    assert not bad, f"{module} reaches: {', '.join(bad)}"


def test_the_check_sees_a_lazy_import(tmp_path: Path) -> None:
    """The guard itself: an import inside a function is found."""
    tree = ast.parse("def f():\n    import subprocess\n")
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert any(_forbidden(n) for n in names)
    assert _forbidden("netroot.adapters.ssh") and not _forbidden("netroot.adaptersx")
