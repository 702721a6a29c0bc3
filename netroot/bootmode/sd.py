"""sd: the board boots its own card, and netroot-mount mounts its version over NFS into a chroot."""

from __future__ import annotations

import shlex

from netroot.bootmode.base import BootMode

CHROOT = "/usr/local/sbin/netroot-chroot"  # on the board: runs a command in its version


def _word(part: str) -> str | None:
    words = part.split()
    return words[0] if words else None


class SdBoot(BootMode):
    name = "sd"
    # The board role ships the first three inside the fourth (one raw script, one round trip).
    board_templates = (
        "netroot-mount.j2",
        "netroot-chroot.j2",
        "netroot-mount.service.j2",
        "_board_apply.sh.j2",
        "_board_boot_config.sh.j2",
    )
    version_probe = f"test -x {CHROOT}"
    prepared_before_rollout = True

    def exec_in_version(self, argv: str) -> str:
        return f"{CHROOT} {argv}"

    def in_version(self, command: str) -> str:
        return self.exec_in_version(f"/bin/sh -c {shlex.quote(command)}")

    def version_root_missing(self, board: str) -> str:
        return f"{CHROOT} missing: run `netroot provision {board}`"

    def read_probe(
        self, assigned: str, mounted: str, cmdline: str
    ) -> tuple[str | None, str | None]:
        """First word of /etc/netroot/assigned and /run/netroot/mounted (None when empty)."""
        return _word(assigned), _word(mounted)

    def drift(self, should: str | None, assigned: str | None, mounted: str | None) -> str:
        problems = []
        if mounted is None:
            problems.append("nothing mounted")
        elif assigned and mounted != assigned:
            problems.append(f"mounted {mounted} but assigned {assigned}")
        if should and assigned != should:
            problems.append(f"should run {should}, assigned {assigned}")
        return "; ".join(problems)
