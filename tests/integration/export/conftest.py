"""Fixtures for the export integration tests: the real Docker engine and local test images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.export import dockerkit


@pytest.fixture(scope="session")
def docker_client() -> Any:
    client = dockerkit.docker_client()
    if client is None:
        pytest.skip("Docker engine not reachable (start dockerd: `bash .ci/setup`)")
    return client


@pytest.fixture(scope="session")
def images(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the fidelity and layered images locally (FROM scratch, no registry)."""
    work = tmp_path_factory.mktemp("images")
    dockerkit.build_fidelity(work)
    return work
