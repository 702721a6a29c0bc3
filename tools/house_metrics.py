"""Structure figures of netroot, read from the code's own imports (stdlib `ast` only).

    python tools/house_metrics.py [--json] [ROOT]

Prints:
- folder cycles: pairs of rooms (a sub-package of netroot, or a top-level module) that import
  each other, directly or round a longer loop; lazy imports inside functions count;
- adapter importers: modules outside the purity test's IO_MODULES that import netroot.adapters
  (on a tree from before that list: outside adapters/, cli/ and lab/);
- boot-mode branches: `if`, conditional expressions and comprehension filters whose test names
  the boot mode (`netboot`, `boot_mode`, `_netboot(...)`, or a comparison with "netboot"/"sd"),
  outside BOOT_MODE_HOME (the lab's, about how many diskless machines it builds, apart);
- where branches: `if`, conditional expressions and comprehension filters that test where a
  version lives (`where_test`: an attribute or name `remote`/`is_remote`/`several`, a
  `server`/`servers` tested for None or truth, `len(...servers...)` compared), outside
  WHERE_HOME, the one module that chooses the place (and outside netroot.remote, the programs
  that run ON the server, and the lab, whose `remote` is how it builds its server VM);
- version-tree rules written twice: the four rules of the version tree, each found by an AST
  shape (`TREE_RULES`: base mode = `os.chmod(X.base, ...)` or `X.base.mkdir(mode=...)`;
  stale cleanup = a loop over `X.staging.iterdir()`; two-rename commit = a function with two or
  more `os.rename` calls, one of them onto `manifest_path(...)`; newest = a function that sorts
  (`sorted`/`.sort`) and reads `exported_at` or a file's `st_mtime[_ns]`): a rule counts once
  when more than one netroot module has its shape (each module listed beside it);
- long modules: netroot modules over MAX_LINES lines;
- rooms without a tests/unit/<room>/ folder (the tests mirror the package);
- smoke stage files, NFS kind modules, `Fleet` classes, name clashes: see `kinds_figures`.

Exit status 0 always: the figures are for reading.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_LINES = 400
# The modules allowed to do IO (and so to use an adapter) are listed once, in the purity test.
PURITY_TEST = Path("tests/unit/core/test_purity.py")
NARROW = ("netroot.adapters", "netroot.cli", "netroot.lab")  # the list before there was one
BOOT_MODE_HOME = "netroot.bootmode"
# The purity test names the QPU program by one entry, expanded from the bundle's lists.
BOARD_PROGRAM = "BOARD_PROGRAM"
BUNDLE_LISTS = ("CORE_MODULES", "EMULATE_MODULES", "TORCH_MODULES")
LAB = "netroot.lab"
BOOT_WORDS = ("netboot", "boot_mode", "_netboot")
BOOT_VALUES = ("netboot", "sd")
# The one module that chooses where a version lives (this host, one server, several).
WHERE_HOME = "netroot.fleet.where"
# Apart: the programs that run ON the server (netroot.remote), the lab (its `remote` is how
# it builds its server VM), the inventory (it parses the flag and picks the home server), the
# rollout's drive (its `server` is a play's outcome on the server) and status (`several` adds
# a server column to a table of boards): none of them asks where a version lives.
WHERE_APART = (
    "netroot.remote",
    "netroot.lab",
    "netroot.inventory",
    "netroot.rollout.drive",
    "netroot.cli.status_cmd",
)
WHERE_WORDS = ("remote", "is_remote", "several")
WHERE_HOLDERS = ("server", "servers")


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the netroot package under `root`."""
    out: dict[str, Path] = {}
    for path in sorted((root / "netroot").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The netroot modules `name` imports (anywhere in the file), resolved to known modules."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m in known and m != name}


def room(module: str) -> str:
    """netroot.export.writer -> netroot.export; netroot.inventory -> netroot.inventory."""
    parts = module.split(".")
    return ".".join(parts[:2])


def folder_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of rooms with more than one room (Tarjan)."""
    rooms: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        edges = rooms.setdefault(room(mod), set())
        edges |= {room(d) for d in deps if room(d) != room(mod)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(rooms.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(rooms):
        if v not in index:
            visit(v)
    return out


def mutual_pairs(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of rooms that import each other directly."""
    edges = {(room(m), room(d)) for m, deps in graph.items() for d in deps}
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


def _names_boot_mode(test: ast.AST) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in BOOT_WORDS:
            return True
        if isinstance(node, ast.Name) and node.id in BOOT_WORDS:
            return True
        if isinstance(node, ast.Compare):
            consts = [c for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)]
            if any(c.value in BOOT_VALUES for c in consts):
                return True
    return False


def boot_branches(known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    return branch_sites(known, _names_boot_mode)


def where_test(test: ast.AST) -> bool:
    """Does this test ask where a version lives? (see the module docstring)"""
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr in WHERE_WORDS:
            return True
        if isinstance(node, ast.Name) and node.id in WHERE_WORDS:
            return True
        if isinstance(node, ast.Compare) and _names_holder(node):
            return True
    # `if server:` / `if not servers:` / `x if server else y`: a holder's truth tested.
    bare = test.operand if isinstance(test, ast.UnaryOp) else test
    parts = bare.values if isinstance(bare, ast.BoolOp) else [bare]
    return any(isinstance(p, ast.Name) and p.id in WHERE_HOLDERS for p in parts)


def _names_holder(node: ast.Compare) -> bool:
    """`server is None`, `len(inv.servers) >= 2`, `len(servers) > 1`."""
    sides = [node.left, *node.comparators]
    for side in sides:
        if isinstance(side, ast.Name) and side.id in WHERE_HOLDERS:
            return any(isinstance(c, ast.Constant) and c.value is None for c in sides)
        if isinstance(side, ast.Call) and isinstance(side.func, ast.Name) and side.func.id == "len":
            for arg in ast.walk(side):
                if isinstance(arg, ast.Attribute | ast.Name) and (
                    getattr(arg, "attr", None) in WHERE_HOLDERS
                    or getattr(arg, "id", None) in WHERE_HOLDERS
                ):
                    return True
    return False


def branch_sites(known: dict[str, Path], test: Any) -> Iterator[tuple[str, int]]:
    """(module, line) of every `if`/`while`/conditional expression/comprehension filter whose
    test `test` accepts."""
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.If | ast.IfExp | ast.While) and test(node.test):
                yield name, node.lineno
            elif isinstance(node, ast.comprehension):
                for cond in node.ifs:
                    if test(cond):
                        yield name, cond.lineno


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    """Calls of `name` (a function `name(...)` or a method `x.name(...)`)."""
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Name) and n.func.id == name)
            or (isinstance(n.func, ast.Attribute) and n.func.attr == name)
        )
    ]


def _on_attr(node: ast.AST | None, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr


def _base_mode(tree: ast.AST) -> bool:
    chmod = any(c.args and _on_attr(c.args[0], "base") for c in _calls(tree, "chmod"))
    mkdir = any(
        isinstance(c.func, ast.Attribute)
        and _on_attr(c.func.value, "base")
        and any(k.arg == "mode" for k in c.keywords)
        for c in _calls(tree, "mkdir")
    )
    return chmod or mkdir


def _stale_cleanup(tree: ast.AST) -> bool:
    return any(
        isinstance(n, ast.For)
        and isinstance(n.iter, ast.Call)
        and isinstance(n.iter.func, ast.Attribute)
        and n.iter.func.attr == "iterdir"
        and _on_attr(n.iter.func.value, "staging")
        for n in ast.walk(tree)
    )


def _functions(tree: ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _two_renames(tree: ast.AST) -> bool:
    for fn in _functions(tree):
        renames = _calls(fn, "rename")
        onto_manifest = any(len(c.args) > 1 and _calls(c.args[1], "manifest_path") for c in renames)
        if len(renames) >= 2 and onto_manifest:
            return True
    return False


NEWEST_KEYS = {"exported_at", "st_mtime", "st_mtime_ns"}


def _reads_key(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in NEWEST_KEYS for n in ast.walk(node))


def _newest(tree: ast.AST) -> bool:
    """A sort keyed by the export time or a file's mtime: in its key, or in the tuples of the
    function that it sorts (`found.append((path.stat().st_mtime_ns, vid))`)."""
    for fn in _functions(tree):
        sorts = _calls(fn, "sorted") + _calls(fn, "sort")
        keyed = any(_reads_key(k.value) for c in sorts for k in c.keywords if k.arg == "key")
        tuples = any(isinstance(n, ast.Tuple) and _reads_key(n) for n in ast.walk(fn))
        if sorts and (keyed or tuples):
            return True
    return False


TREE_RULES = {
    "base mode": _base_mode,
    "stale-staging cleanup": _stale_cleanup,
    "two-rename commit": _two_renames,
    "newest (prune's order)": _newest,
}


def tree_rules(known: dict[str, Path]) -> dict[str, list[str]]:
    """Each version-tree rule -> the netroot modules that have its shape."""
    trees = {n: ast.parse(p.read_text(), str(p)) for n, p in known.items()}
    return {rule: [n for n, t in trees.items() if has(t)] for rule, has in TREE_RULES.items()}


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def io_modules(root: Path) -> tuple[str, ...]:
    """IO_MODULES of the purity test (read with ast: the test is not imported); a tree from
    before that list existed gets the adapters, the CLI and the lab."""
    path = root / PURITY_TEST
    tree = ast.parse(path.read_text(), str(path)) if path.is_file() else ast.Module([], [])
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "IO_MODULES" for t in node.targets
        ):
            return tuple(ast.literal_eval(node.value))
    return NARROW


def expand(root: Path, listed: tuple[str, ...]) -> tuple[str, ...]:
    """IO_MODULES with its BOARD_PROGRAM entry replaced by the modules it stands for."""
    return tuple(m for p in listed for m in (board_program(root) if p == BOARD_PROGRAM else (p,)))


def board_program(root: Path) -> tuple[str, ...]:
    """The netroot.qpu modules netroot/bundle.py lists for the board (its QPU tuples)."""
    path = root / "netroot/bundle.py"
    names: list[str] = []
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in BUNDLE_LISTS for t in node.targets
        ):
            names += ast.literal_eval(node.value)
    return tuple(f"netroot.qpu.{n}" for n in names)


def measure(root: Path, narrow: bool = False) -> dict[str, Any]:
    known = modules(root)
    listed = NARROW if narrow else io_modules(root)
    allowed = expand(root, listed)
    graph = {name: imports(name, path, known) for name, path in known.items()}
    adapter_importers = sorted(
        name
        for name, deps in graph.items()
        if not _under(name, allowed) and any(_under(d, ("netroot.adapters",)) for d in deps)
    )
    branches = {
        f"{n}:{line}" for n, line in boot_branches(known) if not _under(n, (BOOT_MODE_HOME,))
    }
    # The lab's `netboot` is how many diskless virtual machines to build (the lab's shape),
    # not a board's boot mode: counted apart.
    lab = {b for b in branches if b.startswith(f"{LAB}.")}
    lengths = {n: len(p.read_text().splitlines()) for n, p in known.items()}
    where = sorted(
        {
            f"{n}:{line}"
            for n, line in branch_sites(known, where_test)
            if not _under(n, (WHERE_HOME, *WHERE_APART))
        }
    )
    rules = tree_rules(known)
    return {
        "modules": len(known),
        "lines": sum(lengths.values()),
        **kinds_figures(known),
        "folder_cycles": folder_cycles(graph),
        "mutual_folder_pairs": [list(p) for p in mutual_pairs(graph)],
        "adapter_importers_outside_allowed": adapter_importers,
        "boot_mode_branches": sorted(branches - lab),
        "lab_diskless_branches": sorted(lab),
        "where_branches": where,
        "tree_rules_twice": {r: " ".join(ms) for r, ms in rules.items() if len(ms) > 1},
        "tree_rules_homes": {r: " ".join(ms) for r, ms in rules.items()},
        "modules_over_400_lines": {n: c for n, c in sorted(lengths.items()) if c > MAX_LINES},
        "io_modules_allowed": list(listed),
        "rooms_without_tests_unit_folder": unmirrored_rooms(root),
    }


def unmirrored_rooms(root: Path) -> list[str]:
    """The rooms (sub-packages of netroot) with no tests/unit/<room>/ folder of their tests."""
    rooms = sorted(d.name for d in (root / "netroot").iterdir() if (d / "__init__.py").is_file())
    return [r for r in rooms if not (root / "tests" / "unit" / r).is_dir()]


# --- One meaning per name, one object per kind (issue 36) ------------------------------------
# The smoke's path: the modules a smoke passes through, from the two commands that smoke to the
# stages. A stage is "named" by a module that holds an identifier of it; the QPU stage is the
# one to follow (its word is "qpu"), so the figure is the files a stage like it touches.
SMOKE_PATH = (
    "netroot.smoke",
    "netroot.rollout",
    "netroot.cli.context",
    "netroot.cli.smoke_cmd",
    "netroot.cli.rollout_cmd",
)
STAGE_WORD = "qpu"
# The stage's --qpu option (the commands' parameter, its enum, the setting that carries it to
# the stage) is counted apart: a stage without an option of its own has none of these.
OPTION_NAMES = ("qpu", "QpuMode", "qpu_mode")
# The NFS server kinds, and the templates only one kind renders: a module holding one of these
# strings decides something by kind. Their home (NFS_KIND_HOME) is where they belong; the lab
# builds one server of a kind (a container or a VM), counted apart like its boot-mode branches.
NFS_KIND_WORDS = ("kernel", "ganesha", "exports.j2", "ganesha.conf.j2", "netroot-ganesha.j2")
NFS_KIND_HOME = "netroot.nfskind"
LAB_SIDE = ("netroot.lab", "netroot.cli.lab_cmd")


def _identifiers(tree: ast.AST) -> Iterator[str]:
    """Every name the code spells: variables, attributes, arguments, keywords, defs, imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.arg | ast.keyword) and node.arg:
            yield node.arg
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.alias):
            yield node.asname or node.name


def smoke_stage_files(known: dict[str, Path], option: bool = False) -> list[str]:
    """Modules on the smoke's path that name the QPU stage (an identifier holding "qpu") other
    than by its option: what a new stage without an option touches. option=True: the modules
    that carry its --qpu option (what a new stage with an option touches as well)."""
    out = []
    for name, path in known.items():
        if not _under(name, SMOKE_PATH):
            continue
        names = [i for i in _identifiers(ast.parse(path.read_text(), str(path)))]
        hits = [i for i in names if STAGE_WORD in i.lower() and (i in OPTION_NAMES) == option]
        if hits:
            out.append(name)
    return sorted(out)


def nfs_kind_modules(known: dict[str, Path], lab: bool = False) -> list[str]:
    """Modules holding an NFS server kind's name (or a template only one kind renders) as a
    string, outside the kinds' home; lab=True: the lab's own, else every other one."""
    out = []
    for name, path in known.items():
        if _under(name, (NFS_KIND_HOME,)) or _under(name, LAB_SIDE) != lab:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in NFS_KIND_WORDS:
                out.append(name)
                break
    return sorted(out)


def fleet_classes(known: dict[str, Path]) -> list[str]:
    """Where a class called `Fleet` is defined (module:line)."""
    return sorted(
        f"{name}:{node.lineno}"
        for name, path in known.items()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ClassDef) and node.name == "Fleet"
    )


def name_clashes(known: dict[str, Path]) -> dict[str, list[str]]:
    """Module names used by more than one module (`service.py` five times; a module `remote.py`
    beside the package `netroot.remote` counts too): basename -> the modules."""
    by_name: dict[str, list[str]] = {}
    for name in known:
        last = name.rpartition(".")[2]
        if last != "netroot":
            by_name.setdefault(last, []).append(name)
    return {k: sorted(v) for k, v in sorted(by_name.items()) if len(v) > 1}


def kinds_figures(known: dict[str, Path]) -> dict[str, Any]:
    """The figures of this section, for measure()."""
    return {
        "smoke_stage_files": smoke_stage_files(known),
        "smoke_option_files": smoke_stage_files(known, option=True),
        "nfs_kind_modules": nfs_kind_modules(known),
        "lab_nfs_kind_modules": nfs_kind_modules(known, lab=True),
        "fleet_classes": fleet_classes(known),
        "name_clashes": name_clashes(known),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).parents[1])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--narrow",
        action="store_true",
        help="count adapter importers outside adapters/, cli/ and lab/ only (not IO_MODULES)",
    )
    args = parser.parse_args(argv)
    figures = measure(args.root, args.narrow)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"modules: {figures['modules']}, lines: {figures['lines']}")
    for key, value in figures.items():
        if isinstance(value, dict):
            items = [f"{k} {v}" for k, v in value.items()]
        elif isinstance(value, list):
            items = [" <-> ".join(i) if isinstance(i, list) else str(i) for i in value]
        else:
            continue
        print(f"{key}: {len(items)}")
        for item in items:
            print(f"  {item}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
