"""docs/architecture.md against the code: every claim the page makes that a program can check.

- the room order: a room imports only rooms in its row or below (the imports as
  tools/house_metrics.py reads them), and every room is in the table once;
- every file or folder it names exists; every class, function, method and constant it names is
  defined where it says (a bare name: somewhere in netroot/; `Class.name`: on that class;
  `module.name`: in that module); every test it names exists;
- the modules allowed IO, entry for entry, are the purity test's IO_MODULES;
- every figure it quotes is what `python3 tools/house_metrics.py` prints today.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.unit.core.test_house_metrics import _metrics as house_metrics

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs/architecture.md"
METRICS_COMMAND = "python3 tools/house_metrics.py"
TICKED = re.compile(r"`([^`]+)`")
FILE = re.compile(r"[\w.-]+\.(txt|j2|json|jsonl|yml|yaml|conf|md|sh)")  # a file's name, not code


@cache
def _metrics() -> ModuleType:
    return house_metrics()


def _section(title: str) -> str:
    """The text of the doc's `## title` section, up to the next `## `."""
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _table(title: str) -> list[list[str]]:
    """The rows (cells) of the table in a section, header and rule left out."""
    rows = [line for line in _section(title).splitlines() if line.startswith("|")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows[2:]]


def _room_of(token: str) -> str:
    """`cli/` -> netroot.cli, `run.py` -> netroot.run, `__init__.py` -> netroot."""
    if token == "__init__.py":
        return "netroot"
    return "netroot." + token.removesuffix("/").removesuffix(".py")


def _doc_rooms() -> list[list[str]]:
    return [
        [_room_of(t) for t in TICKED.findall(row[0])] for row in _table("The rooms, top to bottom")
    ]


def _room_edges(root: Path) -> dict[str, set[str]]:
    hm = _metrics()
    known = hm.modules(root)
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        deps = edges.setdefault(hm.room(name), set())
        deps |= {hm.room(d) for d in hm.imports(name, path, known)} - {hm.room(name)}
    return edges


def order_violations(rows: Sequence[Sequence[str]], edges: Mapping[str, set[str]]) -> list[str]:
    """Imports that go up the table (a room importing a room in a row above its own)."""
    row_of = {room: i for i, row in enumerate(rows) for room in row}
    return sorted(
        f"{room} imports {dep}"
        for room, deps in edges.items()
        for dep in deps
        if room in row_of and dep in row_of and row_of[dep] < row_of[room]
    )


def test_every_room_is_in_the_table_once() -> None:
    listed = [room for row in _doc_rooms() for room in row]
    assert sorted(listed) == sorted(set(listed))
    assert set(listed) == set(_room_edges(ROOT))


def test_the_room_order_is_the_imports_order() -> None:
    assert order_violations(_doc_rooms(), _room_edges(ROOT)) == []


def test_the_order_check_sees_an_import_that_goes_up() -> None:
    rows = _doc_rooms()
    flipped = [rows[-1], *rows[1:-1], rows[0]]  # the ground on top, the commands at the bottom
    assert "netroot.cli imports netroot.errors" in order_violations(flipped, _room_edges(ROOT))


# --- names --------------------------------------------------------------------------------


def _tokens() -> list[str]:
    return TICKED.findall(DOC.read_text())


def _is_path(token: str) -> bool:
    return bool(re.fullmatch(r"[\w./-]+(\.py|/)", token)) or token.startswith(
        ("playbooks/", "tests/", "tools/", "bench/", "docs/", "templates/")
    )


def test_every_file_and_folder_named_exists() -> None:
    missing = [
        t
        for t in _tokens()
        if _is_path(t) and not (ROOT / "netroot" / t).exists() and not (ROOT / t).exists()
    ]
    assert missing == []


@cache
def _definitions() -> tuple[dict[str, set[str]], dict[str, set[str]], set[str]]:
    """(module basename -> its top-level names, class -> its members, every name defined in
    netroot/ at any level)."""
    by_module: dict[str, set[str]] = {}
    by_class: dict[str, set[str]] = {}
    every: set[str] = set()
    for path in (ROOT / "netroot").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        base = path.parent.name if path.name == "__init__.py" else path.stem
        top = by_module.setdefault(base, set())
        top |= set(_names(tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                by_class.setdefault(node.name, set()).update(_names(node.body))
            every |= set(_names([node])) if isinstance(node, ast.stmt) else set()
    return by_module, by_class, every


def _names(body: Sequence[ast.stmt]) -> Iterator[str]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id


def _tests_defined() -> set[str]:
    return {
        node.name
        for path in (ROOT / "tests").rglob("test_*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.FunctionDef)
    }


@cache
def _figures() -> dict[str, Any]:
    figures: dict[str, Any] = _metrics().measure(ROOT)
    return figures


def _code_like(name: str) -> bool:
    """A lowercase name with an underscore is a function's, unless it is an inventory
    variable (netroot_*) or a figure's key."""
    return "_" in name and not name.startswith("netroot_") and name not in _figures()


def unknown_names(tokens: Sequence[str]) -> list[str]:
    """The code names among `tokens` that the code does not define where the doc says."""
    by_module, by_class, every = _definitions()
    purity = ast.parse((ROOT / "tests/unit/core/test_purity.py").read_text())
    every = every | set(_names(purity.body)) | {"BOARD_PROGRAM"}
    modules = set(_metrics().modules(ROOT))
    tests = _tests_defined()
    out = []
    for token in tokens:
        name = token.removesuffix("()")
        if _is_path(token) or FILE.fullmatch(name) or not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            continue
        if name.startswith("netroot."):
            ok = name in modules
        elif name.startswith("test_"):
            ok = name in tests
        elif "." in name:
            owner, _, member = name.rpartition(".")
            ok = member in by_class.get(owner, set()) | by_module.get(owner, set())
        elif name[0].isupper() or token.endswith("()") or _code_like(name):
            ok = name in every
        else:
            continue  # a word: a command, a version's name, a file's name
        if not ok:
            out.append(token)
    return out


def test_every_class_function_and_test_named_is_defined_where_the_doc_says() -> None:
    assert unknown_names(_tokens()) == []


def test_the_name_check_sees_a_name_that_is_gone() -> None:
    gone = ["Fleet.protected", "RemoteFleet", "fleet.service", "open_remote()", "test_nowhere"]
    assert unknown_names(["Fleet.protection", "Fleet", "open_place", *gone]) == gone


# --- side effects and figures -------------------------------------------------------------


def test_the_io_list_is_the_purity_tests() -> None:
    listed = [
        TICKED.findall(line)[0]
        for line in _section("Where side effects are allowed").splitlines()
        if line.startswith("- `")
    ]
    assert tuple(listed) == _metrics().io_modules(ROOT)


def _figure(value: Any) -> int:
    return len(value) if isinstance(value, list | dict) else int(value)


def test_every_figure_quoted_is_what_the_metrics_print() -> None:
    assert METRICS_COMMAND in _section("Figures")
    quoted = {TICKED.findall(row[0])[0]: int(row[1]) for row in _table("Figures")}
    figures = _figures()
    assert quoted == {key: _figure(figures[key]) for key in quoted}
    assert len(quoted) >= 10  # the table was read, not skipped
