"""What every boot mode answers (pure: no IO, no templates, no sessions)."""

from __future__ import annotations

from abc import ABC, abstractmethod


class BootMode(ABC):
    name: str
    # Inventory fields a board of this mode must set (netroot_*).
    required_vars: tuple[str, ...] = ()
    # Templates the board role renders for such a board (templates/).
    board_templates: tuple[str, ...] = ()
    # The NFS server serves its boot files (dnsmasq proxy-DHCP + TFTP).
    served_over_tftp: bool = False
    # The board keeps a boot config of its own (config.txt on its card) that netroot sets up
    # once, with a reboot: a rollout does that first, at once, for boards that run no version.
    prepared_before_rollout: bool = False
    # The smoke's first command on the board: rc 0 when the board's version can be entered.
    version_probe: str = "true"

    @abstractmethod
    def exec_in_version(self, argv: str) -> str:
        """The board-side command line that runs `argv` (a program and its arguments) in the
        version the board runs."""

    @abstractmethod
    def in_version(self, command: str) -> str:
        """The board-side command line that runs the shell string `command` in the version."""

    def version_root_missing(self, board: str) -> str:
        """Why the smoke cannot enter the version when `version_probe` failed ("" = it can)."""
        return ""

    @abstractmethod
    def read_probe(
        self, assigned: str, mounted: str, cmdline: str
    ) -> tuple[str | None, str | None]:
        """(assigned, mounted) from the status probe's three parts (fleet/boardfacts.py PROBE)."""

    @abstractmethod
    def drift(self, should: str | None, assigned: str | None, mounted: str | None) -> str:
        """What differs between what the board runs and what it should run ("" = in line)."""
