"""What the built-in smoke checks read, through the testinfra backend they are handed: the
board outside its version (`BoardShell`) and the version itself (`version_facts`), each read
once per board in one round trip and kept on the backend.

No IO of its own (the purity guard checks it): every command goes through the backend (the
netroot:// backend: its `run` in the version, its `run_on_board` outside), so the checks that
import this stay checked too.
"""

from __future__ import annotations

import contextlib
from typing import Any

from netroot.smoke import versionfacts
from netroot.smoke.checks.bootchecks import for_backend
from netroot.smoke.facts import BoardResult, BoardSnapshot, FactsError, new_token, parse, probe


class BoardShell:
    """Commands on the board itself (outside the chroot)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def run(self, command: str) -> BoardResult:
        result: BoardResult = self._backend.run_on_board(command)
        return result

    @property
    def facts(self) -> BoardSnapshot:
        """The files the checks read on the board, read once per board in one round trip
        (netroot/smoke/facts.py) and kept on the backend for the board's later checks.

        With an inventory board behind the backend, its version is read first: the version's
        probe writes a file in its writable layer that this read looks for in the shared
        export (a write that leaked) and then removes; the boot mode's checks say which
        commands (bootchecks.py `board_commands`)."""
        cached: BoardSnapshot | None = getattr(self._backend, "_netroot_facts", None)
        if cached is None:
            commands: tuple[tuple[str, str], ...] = ()
            if getattr(self._backend, "board", None) is not None:
                # A failed read is the in-version checks' to report; the board's go on.
                with contextlib.suppress(AssertionError):
                    version_facts_of(self._backend)
                commands = for_backend(self._backend).board_commands(self._backend.board.name)
            token = new_token()
            res = self.run(probe(token, commands=commands))
            if res.rc != 0:
                err = res.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
                raise AssertionError(f"could not read the board's files: rc {res.rc} {err[0]}")
            try:
                cached = parse(token, res.stdout.decode(errors="replace"))
            except FactsError as exc:
                raise AssertionError(str(exc)) from None
            self._backend._netroot_facts = cached
        return cached


def version_facts_of(backend: Any) -> versionfacts.VersionSnapshot:
    """What the built-in checks read in the board's version, read once per board in one round
    trip (netroot/smoke/versionfacts.py) and kept on the backend; AssertionError naming why
    when it could not be read (every in-version check then fails with that reason)."""
    cached = getattr(backend, "_netroot_version", None)
    if cached is None:
        token = new_token()
        # Another testinfra backend has no board read after this one: the probe cleans up.
        keep = hasattr(backend, "run_on_board")
        command = versionfacts.probe(token, backend.get_hostname(), keep=keep)
        res = backend.run(command)
        try:
            cached = versionfacts.parse(token, res.rc, res.stdout, res.stderr)
        except versionfacts.VersionProbeFailed as exc:
            cached = exc
        backend._netroot_version = cached
    if isinstance(cached, versionfacts.VersionProbeFailed):
        raise AssertionError(str(cached))  # plain: the report shows the message, not the class
    return cached


def version_facts(host: Any) -> versionfacts.VersionSnapshot:
    """`version_facts_of` the host's backend (for the checks, which get testinfra's host)."""
    return version_facts_of(host.backend)
