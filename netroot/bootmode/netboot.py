"""netboot: no card; firmware and kernel over TFTP, and the root is the version itself (NFS)."""

from __future__ import annotations

import re

from netroot.bootmode.base import BootMode

# nfsroot=SERVER:<export root>/<image>/versions/<id>,options: the version is the path's last part.
# The board role reads it with the same pattern (netroot_board_nfsroot_pattern).
NFSROOT_PATTERN = r"nfsroot=[^ ]*/versions/([0-9a-f]+)(?=[,\s]|$)"
NFSROOT_RE = re.compile(NFSROOT_PATTERN)
CMDLINE_TEMPLATE = "cmdline.txt.j2"


def booted_version(proc_cmdline: str) -> str | None:
    """The version on a kernel command line (cmdline.txt.j2's nfsroot=), None when there is none."""
    found = NFSROOT_RE.search(proc_cmdline)
    return found.group(1) if found else None


class NetBoot(BootMode):
    name = "netboot"
    required_vars = ("netroot_mac", "netroot_serial")
    board_templates = (CMDLINE_TEMPLATE,)
    served_over_tftp = True
    version_probe = "true"  # its root is the version: nothing to find but root itself

    def exec_in_version(self, argv: str) -> str:
        return argv

    def in_version(self, command: str) -> str:
        return command

    def read_probe(
        self, assigned: str, mounted: str, cmdline: str
    ) -> tuple[str | None, str | None]:
        """Nothing assigned on the board (its TFTP link says); mounted = the booted version."""
        return None, booted_version(cmdline)

    def drift(self, should: str | None, assigned: str | None, mounted: str | None) -> str:
        if mounted is None:
            return "booted no netroot version (no nfsroot=.../versions/ID in /proc/cmdline)"
        if should and mounted != should:
            return f"should run {should}, booted {mounted}"
        return ""
