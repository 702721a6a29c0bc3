"""Where netroot keeps its state and caches (overridable by environment)."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """Per-user state: the lab, rollout state. `NETROOT_HOME` overrides."""
    env = os.environ.get("NETROOT_HOME")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "netroot"


def cache_dir() -> Path:
    """Build caches (rootfs tars, kernels, initramfs). `NETROOT_CACHE` overrides."""
    env = os.environ.get("NETROOT_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "netroot"


def lab_dir() -> Path:
    """The virtual lab's directory (inventory, keys, known_hosts, pids)."""
    return state_dir() / "lab"


def lab_inventory() -> Path:
    return lab_dir() / "inventory.yml"


def project_file(*parts: str) -> Path:
    """A file shipped with netroot (templates, playbooks, images), in the wheel or the checkout."""
    pkg = Path(__file__).resolve().parent
    shipped = pkg / "data" / Path(*parts)
    if shipped.exists():
        return shipped
    return pkg.parent / Path(*parts)
