"""The same image exported at different times, by both ways of reading it: one tree hash.

Against the real Docker engine: each export creates its own container, whose init layer
Docker stamps with that moment (netroot.export.image.CONTAINER_MADE)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from netroot.export.image import CONTAINER_MADE, image_time_ns
from netroot.export.manifest import Manifest
from tests.integration.export import dockerkit
from tests.integration.export.test_export_docker import export_json

pytestmark = pytest.mark.integration


def _next_second() -> None:
    time.sleep(1.05 - time.time() % 1)


def test_same_image_at_three_times_one_tree_hash(
    images: Path, docker_client: Any, tmp_path: Path
) -> None:
    runs = []
    for i, flags in enumerate(([], ["--stream"], [])):
        _next_second()  # each container made in a second of its own
        runs.append(export_json(tmp_path / f"r{i}", dockerkit.FIDELITY, "--name", "fid", *flags))
    assert [r["source"]["via"] for r in runs] == ["layer-dirs", "docker-export", "layer-dirs"]
    assert len({r["version"] for r in runs}) == 1
    assert len({r["tree_hash"] for r in runs}) == 1, [r["tree_hash"] for r in runs]
    created = docker_client.images.get(dockerkit.FIDELITY).attrs["Created"]
    manifest = Manifest.from_json(Path(runs[0]["path"] + ".json").read_text())
    for path in CONTAINER_MADE & set(manifest.entries):
        assert manifest.entries[path].mtime_ns == image_time_ns(created), path
        assert os.lstat(Path(runs[0]["path"]) / path).st_mtime_ns == image_time_ns(created)


def test_container_made_is_what_this_engine_makes(images: Path, docker_client: Any) -> None:
    """CONTAINER_MADE is the init layer of this engine's containers, path for path."""
    c = docker_client.containers.create(dockerkit.FIDELITY, command=["/x"], network_disabled=True)
    try:
        driver = c.attrs["GraphDriver"]
        if driver["Name"] != "overlay2":
            pytest.skip(f"storage driver {driver['Name']}: no init layer dir to read")
        init = Path(driver["Data"]["LowerDir"].split(":")[0])
        assert init.parent.name.endswith("-init"), init
        made = {str(p.relative_to(init)) for p in init.rglob("*")}
    finally:
        c.remove(force=True)
    assert made == CONTAINER_MADE
