"""Help as a shell user expects it: one short line a command in `netroot --help`, examples in
each command's --help, no value placeholder on a flag, completion, and a --help that loads
none of the heavy libraries (Ansible, paramiko, Docker, the inventory)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.clikit import netroot
from tests.unit.cli.test_global_options import _commands

COMMANDS = [(path, command) for path, command in _commands() if path]
HEAVY = ("ansible", "ansible_runner", "paramiko", "docker", "testinfra", "jinja2", "yaml")


@pytest.mark.parametrize("path,command", COMMANDS, ids=[p for p, _ in COMMANDS])
def test_each_command_has_a_short_line_and_examples(
    path: str, command: Any, tmp_path: Path
) -> None:
    if command.hidden:
        return
    assert command.short_help and len(command.short_help) <= 62, (path, command.short_help)
    done = netroot(*path.split(), "--help", home=tmp_path)
    assert done.returncode == 0, done.stderr
    if not getattr(command, "commands", None):  # a group lists its commands instead
        assert "Examples:" in done.stdout, path
        assert f"netroot {path}" in done.stdout.split("Examples:")[1], path
    assert "<bool>" not in done.stdout and "<int>  More detail" not in done.stdout, path


def test_the_command_list_is_one_line_each(tmp_path: Path) -> None:
    done = netroot("--help", home=tmp_path)
    listing = [line for line in done.stdout.split("Commands")[1].splitlines() if "│" in line]
    names = [path for path, _ in COMMANDS if " " not in path]
    assert len(listing) == len(names), listing  # no description wraps onto a second line
    assert "<bool>" not in done.stdout
    flags = netroot("rollout", "--help", home=tmp_path).stdout
    yes = next(line for line in flags.splitlines() if "--yes" in line)
    assert "Do not ask" in yes and "<" not in yes, yes


def test_shell_completion(tmp_path: Path) -> None:
    # The script for each shell (named, not detected from the parent process: a test's own).
    for shell, word in (("bash", "complete"), ("zsh", "#compdef netroot"), ("fish", "complete")):
        done = netroot("--show-completion", shell, home=tmp_path,
                       _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")  # fmt: skip
        assert done.returncode == 0 and word in done.stdout, (shell, done.stderr)
    # What bash asks the completion for, as the script would: commands, then an option's choices.
    for words, cword, expected in (("netroot sta", "1", "status"),
                                   ("netroot rollout x --qpu e", "4", "emulate")):  # fmt: skip
        done = netroot(home=tmp_path, _NETROOT_COMPLETE="complete_bash", COMP_WORDS=words,
                       COMP_CWORD=cword)  # fmt: skip
        assert done.stdout.split() == [expected], (words, done.stdout, done.stderr)


def test_help_loads_no_heavy_library(tmp_path: Path) -> None:
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(' '.join(sys.modules), file=sys.stderr))\n"
        "sys.argv = ['netroot', '--help']\n"
        "from netroot.cli.main import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = {name.partition(".")[0] for name in done.stderr.split()}
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
    assert "netroot.inventory" not in done.stderr.split()
