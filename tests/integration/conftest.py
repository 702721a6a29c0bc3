"""Fixtures shared by the integration tests of several NFS servers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.integration.provision_hosts import NetnsHost, netns_host


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, NetnsHost]]:
    """Two sshd hosts, nfs-01 and nfs-02, each in its own network namespace."""
    with ExitStack() as stack:
        yield {
            name: stack.enter_context(netns_host(tmp_path_factory.mktemp(name)))
            for name in ("nfs-01", "nfs-02")
        }
