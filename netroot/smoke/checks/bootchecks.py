"""The built-in checks that differ by boot mode, one class per mode (test_netroot_builtin.py
asks `for_host(host)` which one applies). Adding a boot mode: one class, one entry in CHECKS.

`host` runs commands in the board's version (the chroot on an sd board, the booted root on a
netboot board); `board` runs them on the board itself (facts.BoardShell).
"""

from __future__ import annotations

from typing import Any

from netroot import bootmode
from netroot.bootmode.netboot import booted_version
from netroot.smoke.facts import ASSIGNED, MOUNTED

SHARED = "/run/netroot/shared"  # on the board: the image's export, mounted read-only
MANIFEST = "/run/netroot/manifest.json"  # in the chroot: the mounted version's manifest
READ_MANIFEST = (
    "/usr/bin/python3 -c \"import json; d = json.load(open('" + MANIFEST + "')); "
    "print(d['version'], d['tree_hash'])\""
)


class SdChecks:
    """The board boots its card; its version is a chroot over the read-only shared export."""

    def version_mounted(self, host: Any, board: Any, expected: dict[str, Any]) -> None:
        facts = board.facts
        mounted = facts.read(MOUNTED)
        assert mounted, f"{MOUNTED} is empty: netroot-mount did not finish"
        want = expected.get("version") or facts.read(ASSIGNED)
        assert mounted == want, f"mounted version {mounted}, should run {want}"
        version, tree_hash = host.check_output(READ_MANIFEST).split()
        assert version == want, f"the chroot's manifest is version {version}, should be {want}"
        if expected.get("tree_hash"):
            same = tree_hash == expected["tree_hash"]
            assert same, "the chroot's tree hash differs from the export"
        opts = facts.mount_options("/run/netroot/root") or ""
        assert f"{SHARED}/versions/{want}" in opts, (
            f"chroot root is not over versions/{want}: {opts}"
        )

    def shared_root_read_only(self, host: Any, board: Any) -> None:
        opts = board.facts.mount_options(SHARED)
        assert opts is not None, f"{SHARED} (the image's export) is not mounted"
        assert "ro" in opts.split(","), f"the shared export is mounted {opts}, expected ro"
        probe = board.run(f"touch {SHARED}/.netroot-probe")
        assert probe.rc != 0, f"could write into the shared export at {SHARED}"

    def writable_layer(self, host: Any, board: Any, name: str) -> None:
        version = board.facts.read(MOUNTED)
        probe = f"/var/tmp/.netroot-probe-{name}"
        assert host.run(f"echo {name} > {probe}").rc == 0, "the chroot's root is not writable"
        leaked = board.run(f"test -e {SHARED}/versions/{version}{probe}")
        host.run(f"rm -f {probe}")
        assert leaked.rc != 0, "a write in the chroot reached the shared version"

    def machine_id(self, board: Any, inside: str) -> None:
        same = inside == board.facts.read("/etc/machine-id")
        assert same, "chroot machine-id is not the board's"


class NetbootChecks:
    """No card: the root is the version itself over NFS, with a tmpfs overlay for writes."""

    def version_mounted(self, host: Any, board: Any, expected: dict[str, Any]) -> None:
        booted = booted_version(board.facts.read("/proc/cmdline"))
        assert booted, "/proc/cmdline names no netroot version (nfsroot=.../versions/ID)"
        if expected.get("version"):
            want = expected["version"]
            assert booted == want, f"booted version {booted}, should run {want}"

    def shared_root_read_only(self, host: Any, board: Any) -> None:
        nfs = [m for m in board.facts.mounts if len(m) > 3 and m[2].startswith("nfs")
               and "/versions/" in m[0]]  # fmt: skip
        assert nfs, "no NFS mount of a version (the netbooted root)"
        assert all("ro" in m[3].split(",") for m in nfs), f"the version is mounted rw: {nfs}"

    def writable_layer(self, host: Any, board: Any, name: str) -> None:
        # cmdline.txt asks for netroot.overlay=tmpfs: / is an overlay, its writes in RAM.
        root = [m for m in board.facts.mounts if len(m) > 2 and m[1] == "/"]
        assert root and root[-1][2] == "overlay", f"/ is not an overlay: {root[-1:] or 'none'}"
        probe = f"/var/tmp/.netroot-probe-{name}"
        assert host.run(f"echo {name} > {probe}").rc == 0, "the booted root is not writable"
        host.run(f"rm -f {probe}")

    def machine_id(self, board: Any, inside: str) -> None:
        # Its identity comes from its cmdline.txt, not from the shared image.
        words = board.facts.read("/proc/cmdline").split()
        assert f"systemd.machine_id={inside}" in words, "machine-id is not the one cmdline.txt set"


CHECKS: dict[str, SdChecks | NetbootChecks] = {
    bootmode.SdBoot.name: SdChecks(),
    bootmode.NetBoot.name: NetbootChecks(),
}


def for_host(host: Any) -> SdChecks | NetbootChecks:
    """The checks of the board behind testinfra's `host`; another backend's host (no inventory
    board behind it) is taken for an sd board, as before there were two modes."""
    board = getattr(host.backend, "board", None)
    mode = board.mode if board is not None else bootmode.of(bootmode.DEFAULT)
    return CHECKS[mode.name]
