"""The README is a front door that tells the truth: short, every command and option it shows
exists in the CLI, every relative link in it and in docs/ leads to a file, and the example
inventories load, with netroot's own loader and with Ansible's `ansible-inventory`.

Commands and options are checked against the real command tree (typer's click group after
`_register()`), never a list kept here, so an option renamed or moved in the code fails this
test until the README follows.
"""

from __future__ import annotations

import enum
import json
import os
import re
import shutil
import subprocess
import sys
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from netroot import inventory as inventory_mod
from netroot.cli import main as cli_main
from netroot.provision.plan import check_board_vars, check_server_vars
from netroot.sshtarget import target_for

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
EXAMPLES = sorted((DOCS / "examples").glob("*.yml"))
MAX_README_LINES = 200

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")  # a span may wrap across lines, as in markdown
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
OPTION = re.compile(r"^--?[A-Za-z][\w-]*")


# The command tree is typer's (its own click since typer 0.20): read by duck typing, a group
# being a command with `commands`, an option a parameter whose param_type_name is "option".
Command = Any


def _tree() -> Command:
    cli_main._register()
    return typer.main.get_command(cli_main.app)


def _is_group(command: Command) -> bool:
    return isinstance(getattr(command, "commands", None), dict)


def _listed(group: Command) -> set[str]:
    """The subcommands `--help` lists (not the hidden ones the lab calls itself)."""
    return {name for name, sub in group.commands.items() if not getattr(sub, "hidden", False)}


def _options(command: Command) -> Iterator[Any]:
    return (p for p in command.params if p.param_type_name == "option")


def _opts(command: Command) -> set[str]:
    names = {"-h", "--help"}
    for param in _options(command):
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


def _option(command: Command, name: str) -> Any:
    for param in _options(command):
        if name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _takes_value(command: Command, name: str) -> bool:
    param = _option(command, name)
    return param is not None and not (param.is_flag or param.count)


def _choices(param: Any) -> Iterable[str] | None:
    """The values an option accepts when they are a fixed list (an Enum or a Literal)."""
    if hasattr(getattr(param, "type", None), "choices"):  # plain click
        return [str(c) for c in param.type.choices]
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(m.value) for m in annotation]
    if typing.get_origin(annotation) is typing.Literal:
        return [str(a) for a in typing.get_args(annotation)]
    return None


def _without_fences(text: str) -> str:
    return FENCE.sub("", text)


def shown_commands(text: str) -> list[str]:
    """Every `netroot ...` command line the text shows: in code blocks (one per line) and in
    inline code spans (tables and prose), with table escapes undone."""
    found: list[str] = []
    for _lang, body in FENCE.findall(text):
        for line in body.splitlines():
            line = line.split(" #", 1)[0].strip().removeprefix("$ ")
            if line.startswith("netroot "):
                found.append(line)
    for span in SPAN.findall(_without_fences(text)):
        span = " ".join(span.replace("\\|", "|").split())
        if span.startswith("netroot "):
            found.append(span)
    return found


def _words(command: str) -> list[str]:
    # `[--batch N|P%]` -> `--batch`, `N|P%`: brackets and ellipses are notation, not input.
    return command.replace("[", " ").replace("]", " ").replace("...", " ").split()


def resolve(tree: Command, command: str) -> tuple[list[str], Command, list[str]]:
    """(the command path, its click command, the options shown after it); a problem raises
    AssertionError naming the README's command and what is not in the CLI."""
    words = _words(command)
    assert words[0] == "netroot", command
    rest = words[1:]
    while rest and OPTION.match(rest[0]):  # global options, before the command
        name = rest.pop(0).split("=", 1)[0]
        assert name in _opts(tree), f"{command!r}: netroot has no global option {name}"
        if _takes_value(tree, name) and rest and not OPTION.match(rest[0]):
            rest.pop(0)
    path: list[str] = []
    current = tree
    while _is_group(current) and rest and not OPTION.match(rest[0]):
        name = rest.pop(0)
        sub = current.commands.get(name)
        assert sub is not None, f"{command!r}: `netroot {' '.join(path)}` has no command {name!r}"
        path.append(name)
        current = sub
    assert path, f"{command!r}: no command"
    assert not _is_group(current) or not rest, f"{command!r}: a group, no command"
    options: list[str] = []
    for i, word in enumerate(rest):
        if not OPTION.match(word):
            continue
        name = word.split("=", 1)[0]
        assert name in _opts(current), (
            f"{command!r}: `netroot {' '.join(path)}` has no option {name} "
            f"(it has {', '.join(sorted(_opts(current)))})"
        )
        options.append(name)
        choices = _choices(_option(current, name))
        if choices is not None and i + 1 < len(rest):
            # Shown choices (`--qpu auto|require`) are the command's; placeholders are upper case.
            for value in rest[i + 1].split("|"):
                if value.islower():
                    assert value in choices, f"{command!r}: {name} {value}: not one of {choices}"
    return path, current, options


def test_the_readme_is_a_front_door_under_200_lines() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_keeps_its_two_setup_commands_and_the_lab_section() -> None:
    text = README.read_text()
    blocks = [body.strip() for _lang, body in FENCE.findall(text)]
    assert "bash .ci/demo" in blocks and "bash .ci/test" in blocks
    assert "## What the lab makes easier than a real Pi" in text


def test_every_command_and_option_the_readme_shows_exists() -> None:
    tree = _tree()
    commands = shown_commands(README.read_text())
    assert len(commands) >= 15, commands  # the table, the quick start, troubleshooting
    paths = set()
    for command in commands:
        path, _cmd, _options = resolve(tree, command)
        paths.add(tuple(path))
    # The command table covers every command netroot's --help lists.
    top = {p[0] for p in paths}
    assert top == _listed(tree), sorted(_listed(tree) - top)
    lab = {p[1] for p in paths if p[0] == "lab" and len(p) > 1}
    assert lab == _listed(tree.commands["lab"]), sorted(_listed(tree.commands["lab"]) - lab)


def test_every_option_the_readme_names_alone_exists_on_some_command() -> None:
    # Prose like "`--break-lock`" or "`-vv`": an option of netroot or of one of its commands.
    tree = _tree()
    known = set(_opts(tree))
    stack: list[Command] = [tree]
    while stack:
        command = stack.pop()
        known |= _opts(command)
        if _is_group(command):
            stack.extend(command.commands.values())
    for span in SPAN.findall(_without_fences(README.read_text())):
        first = span.split()[0] if span.split() else ""
        if OPTION.fullmatch(first):
            name = "-v" if re.fullmatch(r"-v+", first) else first  # -vv counts -v twice
            assert name in known, f"README shows {span!r}: no netroot option {name}"


def test_every_command_the_readme_shows_answers_help() -> None:
    tree = _tree()
    runner = CliRunner()
    paths = {tuple(resolve(tree, c)[0]) for c in shown_commands(README.read_text())}
    for path in sorted(paths):
        result = runner.invoke(cli_main.app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)


def test_every_command_the_docs_show_exists() -> None:
    tree = _tree()
    shown = 0
    for md in _markdown_files()[1:]:
        for command in shown_commands(md.read_text()):
            resolve(tree, command)
            shown += 1
    assert shown >= 20, shown


def test_the_command_parser_refuses_what_the_cli_does_not_have() -> None:
    tree = _tree()
    with pytest.raises(AssertionError, match="no option --bogus"):
        resolve(tree, "netroot status --bogus")
    with pytest.raises(AssertionError, match="no command 'frobnicate'"):
        resolve(tree, "netroot frobnicate")
    with pytest.raises(AssertionError, match="no command 'sideways'"):
        resolve(tree, "netroot lab sideways")
    assert resolve(tree, "netroot -i lab.yml smoke TARGET... [--qpu auto|skip]")[2] == ["--qpu"]


def _markdown_files() -> list[Path]:
    return [README, REPO / "bench" / "README.md", *sorted(DOCS.glob("*.md"))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _without_fences(path.read_text())
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def _links(path: Path) -> Iterator[str]:
    yield from LINK.findall(_without_fences(path.read_text()))


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    checked = 0
    for md in _markdown_files():
        for target in _links(md):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            where, _, anchor = target.partition("#")
            dest = (md.parent / where).resolve() if where else md
            assert dest.exists(), f"{md.relative_to(REPO)}: link {target!r}: no {dest}"
            if anchor and dest.suffix == ".md":
                assert anchor in _anchors(dest), f"{md.relative_to(REPO)}: no anchor {target!r}"
            checked += 1
    assert checked >= 30, checked  # the README alone links a dozen docs


def _readme_inventory(tmp_path: Path) -> Path:
    (body,) = [b for lang, b in FENCE.findall(README.read_text()) if lang == "yaml"]
    path = tmp_path / "readme-inventory.yml"
    path.write_text(body)
    return path


def _inventories(tmp_path: Path) -> list[Path]:
    assert {p.name for p in EXAMPLES} >= {"sd-boards.yml", "netboot-remote.yml"}
    return [*EXAMPLES, _readme_inventory(tmp_path)]


def test_the_example_inventories_load_with_netroots_loader(tmp_path: Path) -> None:
    boot_modes = set()
    for path in _inventories(tmp_path):
        inv = inventory_mod.load(path)
        assert inv.boards and inv.servers, path
        for name in inv.boards:
            check_board_vars(inv, name)
            target_for(inv.hosts[name])  # user, become, known_hosts as netroot reads them
            boot_modes.add(inv.boards[name].boot)
        for name in inv.servers:
            check_server_vars(inv, name)
            target_for(inv.hosts[name])
    assert boot_modes == {"sd", "netboot"}  # one example of each, as docs/inventory.md says


def test_inventory_md_embeds_each_example_file_verbatim() -> None:
    text = (DOCS / "inventory.md").read_text()
    blocks = [body for lang, body in FENCE.findall(text) if lang == "yaml"]
    for example in EXAMPLES:
        assert example.read_text() in blocks, f"docs/inventory.md lacks {example.name} as it is"


def _ansible_inventory() -> str:
    here = str(Path(sys.executable).parent)  # ansible-core is netroot's dependency, beside it
    found = shutil.which("ansible-inventory", path=os.pathsep.join([here, os.environ["PATH"]]))
    assert found, "ansible-inventory not found beside this Python (ansible-core)"
    return found


def test_the_example_inventories_load_with_ansible_inventory(tmp_path: Path) -> None:
    for path in _inventories(tmp_path):
        run = subprocess.run(
            [_ansible_inventory(), "-i", str(path), "--list"],
            capture_output=True, text=True, check=False, cwd=tmp_path,
            # An inventory Ansible cannot parse is an error, not a warning and an empty list.
            env={**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
                 "ANSIBLE_INVENTORY_ENABLED": "yaml"},
        )  # fmt: skip
        assert run.returncode == 0, (path, run.stderr[-2000:])
        listed = json.loads(run.stdout)
        inv = inventory_mod.load(path)
        hostvars = listed["_meta"]["hostvars"]
        assert set(hostvars) == set(inv.hosts), path
        for name, host in inv.hosts.items():
            for key, value in host.vars.items():
                if key.startswith("netroot_"):
                    assert hostvars[name].get(key) == value, (path, name, key)


def _variables_read() -> set[str]:
    """Every netroot_* variable the roles default, netroot's code reads from a host's vars, or
    the templates and playbooks read with a default or a definedness test."""
    names: set[str] = set()
    for defaults in (REPO / "playbooks" / "roles").glob("*/defaults/main.yml"):
        names |= {str(k) for k in yaml.safe_load(defaults.read_text())}
    for module in (REPO / "netroot").rglob("*.py"):
        names |= set(re.findall(r"\.get\(\s*\"(netroot_\w+)\"", module.read_text()))
    sources = [*(REPO / "templates").iterdir(), *(REPO / "playbooks").rglob("*.yml")]
    for source in sources:
        text = source.read_text()
        names |= set(re.findall(r"(netroot_\w+)\s*\|\s*default\b", text))
        names |= set(re.findall(r"(netroot_\w+) is (?:not )?defined", text))
    return names


def test_the_inventory_reference_names_every_variable_netroot_reads() -> None:
    doc = (DOCS / "inventory.md").read_text()
    read = _variables_read()
    assert len(read) > 40, sorted(read)
    missing = sorted(n for n in read if f"`{n}`" not in doc)
    assert not missing, f"docs/inventory.md does not describe {missing}"


def test_every_variable_the_inventory_reference_describes_exists() -> None:
    code = "".join(
        p.read_text()
        for root in ("netroot", "templates", "playbooks")
        for p in (REPO / root).rglob("*")
        if p.is_file() and p.suffix in (".py", ".yml", ".j2", ".cfg", "")
    )
    rows = re.findall(r"^\| `(netroot_\w+)` \|", (DOCS / "inventory.md").read_text(), re.MULTILINE)
    assert len(rows) > 40, rows
    stale = sorted(n for n in rows if n not in code)
    assert not stale, f"docs/inventory.md describes variables nothing reads: {stale}"
