"""One pytest process for many boards: collect once, then one forked worker per board.

Starting Python, pytest, testinfra, paramiko and the checks costs the control host about a
second of CPU per process; a process per board paid it for every board. Here the session
collects once and then forks one worker per testinfra host: the boards still run at the same
time (each one's checks mostly wait on its own SSH round trips), each in its own process, so a
board that hangs up, fails or kills its worker cannot touch another board's results. Workers
send their reports back; this process hands them to its own hooks, so the terminal, JUnit and
netroot's results file see them as from a plain run. A worker that dies leaves its unfinished
checks failed, naming why.

Workers need per-process capture: `--capture=sys` or `-s` (fd capture's temporary files would
be shared by every worker after the fork).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import struct
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

_FRAME = struct.Struct("!I")


def testinfra_host(item: pytest.Item) -> Any:
    """The testinfra Host an item runs against (testinfra's parameter), None for a host-less
    test; known from collection on, before any fixture runs."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("_testinfra_host") if callspec is not None else None


def host_id(item: pytest.Item) -> str | None:
    """The item's host as testinfra names it in test ids, None for a host-less test."""
    host = testinfra_host(item)
    return None if host is None else str(host.backend.get_pytest_id())


def by_host(items: Sequence[pytest.Item]) -> tuple[dict[str, list[pytest.Item]], list[pytest.Item]]:
    """Items grouped by host, in collection order; and the items with no host."""
    groups: dict[str, list[pytest.Item]] = {}
    local: list[pytest.Item] = []
    for item in items:
        host = host_id(item)
        (local if host is None else groups.setdefault(host, [])).append(item)
    return groups, local


def run_items(items: Sequence[pytest.Item]) -> None:
    """pytest's own run loop over `items` (fixtures torn down between them as usual)."""
    for i, item in enumerate(items):
        nextitem = items[i + 1] if i + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)


class _Forward:
    """In a worker: every report goes to the parent (pickled frames on a pipe)."""

    def __init__(self, config: pytest.Config, fd: int) -> None:
        self.config = config
        self.fd = fd

    def send(self, message: tuple[Any, ...]) -> None:
        data = pickle.dumps(message)
        os.write(self.fd, _FRAME.pack(len(data)))
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.send(("logstart", nodeid, location))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self.send(("report", data))

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.send(("logfinish", nodeid, location))


def _worker(config: pytest.Config, items: Sequence[pytest.Item], fd: int) -> None:
    """The forked child: run one host's items, forward the reports, never return."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent decides about Ctrl-C
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:  # the parent prints, from the forwarded reports
            config.pluginmanager.unregister(terminal)
        config.pluginmanager.register(_Forward(config, fd), "netroot-forward")
        run_items(items)
        code = 0
    except BaseException:  # whatever it was, the parent reports this host
        traceback.print_exc(file=sys.stderr)
    finally:
        # os._exit runs no cleanup: the backend's SSH master is stopped here, not left to idle.
        host = testinfra_host(items[0]) if items else None
        close = getattr(getattr(host, "backend", None), "close", None)
        with contextlib.suppress(BaseException):
            if close is not None:
                close()
        os._exit(code)


@dataclass
class _Running:
    pid: int
    host: str
    items: list[pytest.Item]
    buffer: bytearray = field(default_factory=bytearray)
    finished: set[str] = field(default_factory=set)


def _frames(buffer: bytearray) -> list[Any]:
    """Complete frames taken off the front of `buffer`."""
    out = []
    while len(buffer) >= _FRAME.size:
        (size,) = _FRAME.unpack_from(buffer)
        if len(buffer) < _FRAME.size + size:
            break
        out.append(pickle.loads(bytes(buffer[_FRAME.size : _FRAME.size + size])))
        del buffer[: _FRAME.size + size]
    return out


def _died(item: pytest.Item, why: str) -> pytest.TestReport:
    return pytest.TestReport(
        item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed", why, "call"
    )


class HostWorkers:
    """pytest plugin: the run loop that forks one worker per host (see the module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @staticmethod
    def check(config: pytest.Config) -> None:
        """Workers need per-process capture (refused before anything runs)."""
        if config.getoption("capture") == "fd":
            raise pytest.UsageError("one worker per host needs --capture=sys or -s")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if session.testsfailed or session.config.option.collectonly:
            return None  # pytest's own loop reports collection errors, or lists
        groups, local = by_host(session.items)
        if len(groups) < 2:
            return None  # nothing to run side by side
        running: dict[int, _Running] = {}
        try:
            for host, items in groups.items():
                read, write = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(read)
                    _worker(self.config, items, write)
                os.close(write)
                running[read] = _Running(pid, host, items)
            self._collect(running)
        except BaseException:
            for run in running.values():
                _stop(run.pid)
            raise
        run_items(local)
        return True

    def _collect(self, running: dict[int, _Running]) -> None:
        """Relay the workers' reports as they come, then account for any worker that died."""
        hook = self.config.hook
        with selectors.DefaultSelector() as selector:
            for fd in running:
                selector.register(fd, selectors.EVENT_READ)
            open_fds = set(running)
            while open_fds:
                for key, _ in selector.select():
                    fd = key.fd
                    run = running[fd]
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        selector.unregister(fd)
                        os.close(fd)
                        open_fds.discard(fd)
                    run.buffer += chunk
                    for message in _frames(run.buffer):
                        self._relay(run, message)
        for run in running.values():
            _, status = os.waitpid(run.pid, 0)
            why = _exit_reason(status)
            for item in run.items:
                if item.nodeid in run.finished:
                    continue
                hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
                message = f"the smoke worker for {run.host} stopped before this check: {why}"
                hook.pytest_runtest_logreport(report=_died(item, message))
                hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

    def _relay(self, run: _Running, message: tuple[Any, ...]) -> None:
        hook = self.config.hook
        kind = message[0]
        if kind == "report":
            report = hook.pytest_report_from_serializable(config=self.config, data=message[1])
            hook.pytest_runtest_logreport(report=report)
        elif kind == "logstart":
            hook.pytest_runtest_logstart(nodeid=message[1], location=message[2])
        elif kind == "logfinish":
            run.finished.add(message[1])
            hook.pytest_runtest_logfinish(nodeid=message[1], location=message[2])


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.WEXITSTATUS(status)}"


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
