"""pytest plugin: the `netroot://` testinfra backend, board-level fixtures, a results file.

Loaded by `netroot smoke`, or by hand: `pytest -p netroot.smoke.plugin --hosts=netroot://pi-01`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import testinfra.backend

from netroot.smoke.shell import BoardShell
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
