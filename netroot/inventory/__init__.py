"""The inventory: the lab admin's own Ansible inventory, read by Ansible, checked by netroot.

`load` reads a file or a directory as Ansible does (reader.py: plugins, group_vars/host_vars,
vault, templates, precedence), then netroot's checks run on the merged result (model.py).
Every `netroot_*` name is declared in variables.py. Warnings (a key or a host written twice,
an unknown netroot_* variable) go to the `netroot.inventory` logger (stderr in the CLI) and
stay on `Inventory.warnings`.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from netroot.errors import UsageError
from netroot.inventory.model import (
    BACKENDS,
    BOOT_MODES,
    MAC_RE,
    NAME_RE,
    REBOOT_BATCH,
    SERIAL_RE,
    VERSION_RE,
    Board,
    Host,
    Inventory,
    InventoryError,
    NfsServer,
    validate,
)
from netroot.paths import lab_inventory, project_file

__all__ = [
    "BACKENDS",
    "BOOT_MODES",
    "MAC_RE",
    "NAME_RE",
    "REBOOT_BATCH",
    "SERIAL_RE",
    "VERSION_RE",
    "Board",
    "Host",
    "Inventory",
    "InventoryError",
    "NfsServer",
    "default_path",
    "load",
    "parse",
]

log = logging.getLogger(__name__)
# Each warning is logged once per process: some callers (a smoke worker per board) load the
# same inventory again.
_logged: set[str] = set()


def default_path() -> Path:
    """`NETROOT_INVENTORY`, else the virtual lab's inventory."""
    env = os.environ.get("NETROOT_INVENTORY")
    return Path(env) if env else lab_inventory()


def playbook_dir() -> Path:
    """Where netroot's playbooks run from: its group_vars/ and host_vars/ count too."""
    return project_file("playbooks")


def load(path: Path | None = None, *, playbooks: Path | None = None) -> Inventory:
    """Read an inventory file or directory with Ansible and check it (`playbooks`: where
    the playbooks run from, netroot's own by default)."""
    from dataclasses import replace

    from netroot.inventory.reader import read

    path = path or default_path()
    if not path.exists():
        raise UsageError(
            f"inventory {path} not found",
            "pass -i FILE or DIRECTORY, set NETROOT_INVENTORY, or start the virtual lab with "
            "`netroot lab up`",
        )
    found = read(path, playbooks or playbook_dir())
    for warning in found.warnings:
        if warning not in _logged:
            _logged.add(warning)
            log.warning("%s", warning)
    inventory = validate(path, found.hosts, found.groups)
    return replace(
        inventory, warnings=found.warnings, vault_password_files=found.vault_password_files
    )


def parse(data: Any, path: Path) -> Inventory:
    """An inventory given as YAML data (tests, the lab's plans): written to a scratch
    directory and read by `load`, so it means what the same file would; errors name `path`."""
    from dataclasses import replace

    with tempfile.TemporaryDirectory(prefix="netroot-inventory-") as scratch:
        written = Path(scratch) / (path.name if path.suffix in (".yml", ".yaml") else "inv.yml")
        written.write_text(yaml.safe_dump(data, sort_keys=False))
        try:
            inventory = load(written)
        except UsageError as exc:
            raise type(exc)(exc.message.replace(str(written), str(path)), exc.hint) from None
    return replace(inventory, path=path)
