"""The NFS server kinds, one object per kind: the only module that knows there are two.

A server runs `kernel` (nfs-kernel-server, /etc/exports: production) or `ganesha` (NFS-Ganesha
in user space: the lab, and hosts without an NFS-capable kernel). Each kind answers what the
rest of netroot asks: which files the server role templates for it, which of them is the
exports config, and the format that config is checked as before it is written (by the same
`remote/nfs_check.py` the role installs on the server and runs as `validate`). The inventory
picks the kind once per server (`of`, from `netroot_nfs_backend`); nobody else tests its name.

The server role has the same kinds (tasks/<kind>.yml, the same templates, the same default):
`tests/unit/core/test_nfskind.py` holds the two to one list. Standard library only, and no
netroot import: the inventory, low in the house, asks it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Rendered for every kind, last: the server's state script (run on every play).
SERVER_STATE_TEMPLATE = "_nfs_server_state.sh.j2"


@dataclass(frozen=True)
class NfsKind:
    name: str
    # The exports config the role writes (a marked block), checked before it is written ...
    exports_template: str
    # ... by remote/nfs_check.py as this format (`netroot-nfs-check FORMAT FILE`, its CHECKS).
    check_format: str
    # What else the role templates for this kind (its control script), before the state script.
    extra_templates: tuple[str, ...] = ()

    @property
    def templates(self) -> tuple[str, ...]:
        """Every file the server role templates for this kind: the exports config first."""
        return (self.exports_template, *self.extra_templates, SERVER_STATE_TEMPLATE)


KERNEL = NfsKind("kernel", "exports.j2", "exports")
GANESHA = NfsKind("ganesha", "ganesha.conf.j2", "ganesha", extra_templates=("netroot-ganesha.j2",))
# Adding a kind: one object, one entry here (and the role's tasks/<kind>.yml).
KINDS: dict[str, NfsKind] = {kind.name: kind for kind in (KERNEL, GANESHA)}
NAMES = tuple(KINDS)
DEFAULT = KERNEL.name  # the role's default too (netroot_nfs_server_backend)


def of(name: str) -> NfsKind:
    """The kind called `name` (the inventory's netroot_nfs_backend); KeyError for another."""
    return KINDS[name]
