"""The built-in checks that differ by boot mode, one class per mode (test_netroot_builtin.py
asks `for_host(host)` which one applies). Adding a boot mode: one class, one entry in CHECKS.

`version` is what the board's version held (shell.version_facts: the chroot on an sd board,
the booted root on a netboot board); `board` is the board itself (shell.BoardShell), whose
one read also runs the mode's `board_commands` (after the version's probe wrote its file).
"""

from __future__ import annotations

import shlex
from typing import Any

from netroot import bootmode
from netroot.bootmode.netboot import booted_version
from netroot.smoke.facts import ASSIGNED, MOUNTED
from netroot.smoke.versionfacts import MANIFEST, VersionSnapshot, probe_file

SHARED = "/run/netroot/shared"  # on the board: the image's export, mounted read-only
ROOT = "/run/netroot/root"  # on the board: the chroot's root


class SdChecks:
    """The board boots its card; its version is a chroot over the read-only shared export."""

    def board_commands(self, name: str) -> tuple[tuple[str, str], ...]:
        """Run on the board after the version's probe: is its file in the shared version (a
        leak)? can the shared export be written? then the probe file goes."""
        leaked = f"{SHARED}/versions/$v{probe_file(name)}"
        return (
            ("leaked", f'v=; read -r v < {MOUNTED}; test -e "{leaked}"'),
            ("shared_writable", f"[ -d {SHARED}/versions ] && touch {SHARED}/.netroot-probe"),
            ("cleanup", f"rm -f {shlex.quote(ROOT + probe_file(name))}"),
        )

    def version_mounted(
        self, version: VersionSnapshot, board: Any, expected: dict[str, Any]
    ) -> None:
        facts = board.facts
        mounted = facts.read(MOUNTED)
        assert mounted, f"{MOUNTED} is empty: netroot-mount did not finish"
        want = expected.get("version") or facts.read(ASSIGNED)
        assert mounted == want, f"mounted version {mounted}, should run {want}"
        python = version.python_facts()
        why = python.get("manifest_error")
        assert "manifest" in python, f"cannot read {MANIFEST} in the chroot: {why}"
        got, tree_hash = python["manifest"]
        assert got == want, f"the chroot's manifest is version {got}, should be {want}"
        if expected.get("tree_hash"):
            same = tree_hash == expected["tree_hash"]
            assert same, "the chroot's tree hash differs from the export"
        opts = facts.mount_options("/run/netroot/root") or ""
        assert f"{SHARED}/versions/{want}" in opts, (
            f"chroot root is not over versions/{want}: {opts}"
        )

    def shared_root_read_only(self, board: Any) -> None:
        opts = board.facts.mount_options(SHARED)
        assert opts is not None, f"{SHARED} (the image's export) is not mounted"
        assert "ro" in opts.split(","), f"the shared export is mounted {opts}, expected ro"
        wrote = board.facts.rc("shared_writable") == 0
        assert not wrote, f"could write into the shared export at {SHARED}"

    def writable_layer(self, version: VersionSnapshot, board: Any, name: str) -> None:
        board.facts.read(MOUNTED)
        assert version.facts.rc("write") == 0, "the chroot's root is not writable"
        leaked = board.facts.rc("leaked") == 0
        assert not leaked, "a write in the chroot reached the shared version"

    def machine_id(self, board: Any, inside: str) -> None:
        same = inside == board.facts.read("/etc/machine-id")
        assert same, "chroot machine-id is not the board's"


class NetbootChecks:
    """No card: the root is the version itself over NFS, with a tmpfs overlay for writes."""

    def board_commands(self, name: str) -> tuple[tuple[str, str], ...]:
        """The board is the version: only the probe file to remove."""
        return (("cleanup", f"rm -f {shlex.quote(probe_file(name))}"),)

    def version_mounted(
        self, version: VersionSnapshot, board: Any, expected: dict[str, Any]
    ) -> None:
        booted = booted_version(board.facts.read("/proc/cmdline"))
        assert booted, "/proc/cmdline names no netroot version (nfsroot=.../versions/ID)"
        if expected.get("version"):
            want = expected["version"]
            assert booted == want, f"booted version {booted}, should run {want}"

    def shared_root_read_only(self, board: Any) -> None:
        nfs = [m for m in board.facts.mounts if len(m) > 3 and m[2].startswith("nfs")
               and "/versions/" in m[0]]  # fmt: skip
        assert nfs, "no NFS mount of a version (the netbooted root)"
        assert all("ro" in m[3].split(",") for m in nfs), f"the version is mounted rw: {nfs}"

    def writable_layer(self, version: VersionSnapshot, board: Any, name: str) -> None:
        # cmdline.txt asks for netroot.overlay=tmpfs: / is an overlay, its writes in RAM.
        root = [m for m in board.facts.mounts if len(m) > 2 and m[1] == "/"]
        assert root and root[-1][2] == "overlay", f"/ is not an overlay: {root[-1:] or 'none'}"
        assert version.facts.rc("write") == 0, "the booted root is not writable"

    def machine_id(self, board: Any, inside: str) -> None:
        # Its identity comes from its cmdline.txt, not from the shared image.
        words = board.facts.read("/proc/cmdline").split()
        assert f"systemd.machine_id={inside}" in words, "machine-id is not the one cmdline.txt set"


CHECKS: dict[str, SdChecks | NetbootChecks] = {
    bootmode.SdBoot.name: SdChecks(),
    bootmode.NetBoot.name: NetbootChecks(),
}


def for_backend(backend: Any) -> SdChecks | NetbootChecks:
    """The checks of the board behind a testinfra backend; another backend (no inventory board
    behind it) is taken for an sd board's, as before there were two modes."""
    board = getattr(backend, "board", None)
    mode = board.mode if board is not None else bootmode.of(bootmode.DEFAULT)
    return CHECKS[mode.name]


def for_host(host: Any) -> SdChecks | NetbootChecks:
    """The checks of the board behind testinfra's `host`."""
    return for_backend(host.backend)
