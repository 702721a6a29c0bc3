"""The board's netroot-mount (templates/netroot-mount.j2) as the provision fixture renders it for
pi-03, and what running it in a mount namespace of its own needs (root, unshare)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from netroot.inventory import load
from netroot.templating import Renderer

INVENTORY = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "provision_inventory.yml"
VERSION = "0123456789abcdef"

IN_A_MOUNT_NAMESPACE = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a mount namespace)"),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)"),
]


def rendered() -> str:
    """pi-03's netroot-mount, assigned VERSION."""
    boards = Renderer(load(INVENTORY)).render_board("pi-03", VERSION)
    return next(r.text for r in boards if r.template == "netroot-mount.j2")
