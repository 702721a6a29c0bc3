"""pytest plugin: the `netroot://` testinfra backend, board-level fixtures, a results file.

Loaded by `netroot smoke`, or by hand: `pytest -p netroot.smoke.plugin --hosts=netroot://pi-01`.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import testinfra.backend

from netroot.adapters.ssh import Result
from netroot.smoke import versionfacts
from netroot.smoke.checks.bootchecks import for_backend
from netroot.smoke.facts import BoardSnapshot, FactsError, new_token, parse, probe
from netroot.smoke.workers import HostWorkers, testinfra_host

testinfra.backend.BACKENDS.setdefault("netroot", "netroot.smoke.backend.NetrootBackend")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netroot")
    group.addoption(
        "--netroot-expected",
        default=None,
        help="JSON file {board: {version, tree_hash}} of what each board should run",
    )
    group.addoption(
        "--netroot-results", default=None, help="write per-board, per-check results as JSON"
    )
    group.addoption(
        "--netroot-workers",
        action="store_true",
        default=False,
        help="collect once, then run each host's checks in its own forked worker, all at once "
        "(needs --capture=sys or -s)",
    )


class BoardShell:
    """Commands on the board itself (outside the chroot)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def run(self, command: str) -> Result:
        result: Result = self._backend.run_on_board(command)
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


@pytest.fixture
def board(host: Any) -> BoardShell:
    """The board outside its chroot; needs the netroot:// backend."""
    if not hasattr(host.backend, "run_on_board"):
        pytest.skip("needs the netroot:// backend (board outside the chroot)")
    return BoardShell(host.backend)


@pytest.fixture
def expected(request: pytest.FixtureRequest, host: Any) -> dict[str, Any]:
    """What this board should run, from --netroot-expected (empty when not given)."""
    path = request.config.getoption("--netroot-expected")
    if not path:
        return {}
    data: dict[str, Any] = json.loads(Path(path).read_text())
    entry: dict[str, Any] = data.get(host.backend.get_hostname(), {})
    return entry


class _Collector:
    """Per-board, per-check rows, from the reports (also those a host worker relayed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.results: list[dict[str, Any]] = []
        self.items: dict[str, pytest.Item] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = {item.nodeid: item for item in session.items}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        item = self.items.get(report.nodeid)
        if item is None:
            return
        host = testinfra_host(item)
        board = host.backend.get_hostname() if host is not None else "local"
        message = ""
        if report.skipped and isinstance(report.longrepr, tuple):
            message = str(report.longrepr[2])
        elif report.failed:
            message = _short(report)
        self.results.append(
            {
                "board": board,
                "check": _check_name(item, board),
                "file": str(item.path.name),
                "status": _STATUS[report.outcome],
                "message": message.removeprefix("Skipped: "),
                "seconds": round(report.duration, 3),
            }
        )

    def pytest_sessionfinish(self) -> None:
        self.path.write_text(json.dumps(self.results, indent=2))


def _check_name(item: pytest.Item, board: str) -> str:
    """The check's name with its own parameters but not testinfra's host one:
    test_pseudo_filesystems[/dev] for test_pseudo_filesystems[pi-02-/dev]."""
    name = getattr(item, "originalname", item.name)
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return name
    ident = str(callspec.id)
    for host_part in (f"{board}-", f"-{board}"):
        if ident.startswith(host_part) and host_part[-1] == "-":
            ident = ident[len(host_part) :]
        elif ident.endswith(host_part) and host_part[0] == "-":
            ident = ident[: -len(host_part)]
    return name if ident in ("", board) else f"{name}[{ident}]"


_STATUS = {"passed": "pass", "failed": "fail", "skipped": "skip"}


def _short(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message).splitlines()[0][:500]
    return str(report.longrepr).strip().splitlines()[-1][:500]


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--netroot-results")
    if path:
        config.pluginmanager.register(_Collector(Path(path)), "netroot-results")
    if config.getoption("--netroot-workers"):
        workers = HostWorkers(config)
        workers.check(config)
        config.pluginmanager.register(workers, "netroot-workers")
