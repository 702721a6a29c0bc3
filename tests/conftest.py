"""Two lanes for `pytest -n 2` (.ci/test): the virtual lab's tests in one worker, in their order
(one lab per machine, shared by every e2e test), everything else in the other.

The lab's ARM boards are CPU-bound under emulation but seldom all busy at once (a canary, a
reboot, a smoke: one board at a time), so the unit and integration tests run beside them
instead of before them. The lanes are xdist's scope scheduling with two scopes, by path (not
`xdist_group` marks: pytest 9.2 ignores the node-id suffix xdist 3.8 gives marked tests).
Without `-n` the tests run one after another, as always.

The lab's lane is the longer one (the critical path), so the other lane's worker runs at a
lower CPU priority (`HOST_NICE`): its tests take the cores the boards leave idle instead of
slowing every board down. Only under xdist, and only for that worker and what it starts
(Docker's containers are the daemon's children, not its).
"""

from __future__ import annotations

import os

import pytest

try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # xdist not installed: no lanes, nothing to schedule
    LoadScopeScheduling = None

LAB = "lab"
HOST = "host"
HOST_NICE = 8


def _lane(nodeid: str) -> str:
    return LAB if nodeid.startswith("tests/e2e/") else HOST


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """In an xdist worker of the host lane: lower this process's priority, once."""
    in_host_lane = os.environ.get("PYTEST_XDIST_WORKER") and _lane(item.nodeid) == HOST
    if in_host_lane and os.getpriority(os.PRIO_PROCESS, 0) < HOST_NICE:
        # Linux: the calling thread's priority, which every process it starts inherits.
        os.setpriority(os.PRIO_PROCESS, 0, HOST_NICE)


if LoadScopeScheduling is not None:

    class Lanes(LoadScopeScheduling):  # type: ignore[misc]
        """Every e2e test one unit of work (one worker, in collection order), the rest another."""

        def _split_scope(self, nodeid: str) -> str:
            return _lane(nodeid)

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> Lanes:
        return Lanes(config, log)
