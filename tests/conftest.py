"""Two lanes for `pytest -n 2 --dist loadgroup` (.ci/test): the virtual lab's tests in one worker,
in their order (one lab per machine, shared by every e2e test), everything else in the other.

The lab's ARM boards are CPU-bound under emulation but seldom all busy at once (a canary, a
reboot, a smoke: one board at a time), so the unit and integration tests run beside them
instead of before them. Without xdist the marks are inert and the tests run one after another.
"""

from __future__ import annotations

import pytest

LAB = "lab"
HOST = "host"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        lane = LAB if item.nodeid.startswith("tests/e2e/") else HOST
        item.add_marker(pytest.mark.xdist_group(lane))
