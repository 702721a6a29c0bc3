"""BASELINE for bench/bench_batch.py, not used by netroot: the built-in smoke checks of an sd
board as they were before the in-version probe (commit dcc5b9c: a command or two per check,
python3 started four times), kept so the bench measures before and after in the same run on
the same boards. Run by pytest with `-p netroot.smoke.plugin` like the real file; it reads the
board's own files the old way (one probe, no in-version probe first).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from netroot.adapters.ssh import Result
from netroot.smoke.facts import ASSIGNED, MOUNTED, BoardSnapshot, new_token, parse, probe

SHARED = "/run/netroot/shared"
MANIFEST = "/run/netroot/manifest.json"
READ_MANIFEST = (
    "/usr/bin/python3 -c \"import json; d = json.load(open('" + MANIFEST + "')); "
    "print(d['version'], d['tree_hash'])\""
)


class _Board:
    """The board outside the chroot, its files read once (facts.py's probe, as before)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def run(self, command: str) -> Result:
        result: Result = self._backend.run_on_board(command)
        return result

    @property
    def facts(self) -> BoardSnapshot:
        cached: BoardSnapshot | None = getattr(self._backend, "_baseline_facts", None)
        if cached is None:
            token = new_token()
            cached = parse(token, self.run(probe(token)).stdout.decode(errors="replace"))
            self._backend._baseline_facts = cached
        return cached


@pytest.fixture
def old_board(host: Any) -> _Board:
    return _Board(host.backend)


def test_assigned_version_mounted(host: Any, old_board: _Board, expected: dict[str, Any]) -> None:
    facts = old_board.facts
    mounted = facts.read(MOUNTED)
    assert mounted, f"{MOUNTED} is empty: netroot-mount did not finish"
    want = expected.get("version") or facts.read(ASSIGNED)
    assert mounted == want, f"mounted version {mounted}, should run {want}"
    version, tree_hash = host.check_output(READ_MANIFEST).split()
    assert version == want, f"the chroot's manifest is version {version}, should be {want}"
    if expected.get("tree_hash"):
        assert tree_hash == expected["tree_hash"], "the chroot's tree hash differs from the export"
    opts = facts.mount_options("/run/netroot/root") or ""
    assert f"{SHARED}/versions/{want}" in opts, f"chroot root is not over versions/{want}: {opts}"


def test_shared_root_read_only(old_board: _Board) -> None:
    opts = old_board.facts.mount_options(SHARED)
    assert opts is not None, f"{SHARED} (the image's export) is not mounted"
    assert "ro" in opts.split(","), f"the shared export is mounted {opts}, expected ro"
    assert old_board.run(f"touch {SHARED}/.netroot-probe").rc != 0, "could write the export"


def test_writable_layer_is_the_boards(host: Any, old_board: _Board) -> None:
    name = host.backend.get_hostname()
    version = old_board.facts.read(MOUNTED)
    probe_file = f"/var/tmp/.netroot-probe-{name}"
    assert host.run(f"echo {name} > {probe_file}").rc == 0, "the chroot's root is not writable"
    leaked = old_board.run(f"test -e {SHARED}/versions/{version}{probe_file}")
    host.run(f"rm -f {probe_file}")
    assert leaked.rc != 0, "a write in the chroot reached the shared version"


@pytest.mark.parametrize(
    "path,node,kind",
    [("/dev", "/dev/null", "c"), ("/proc", "/proc/self/stat", "f"), ("/sys", "/sys/kernel", "d")],
    ids=["/dev", "/proc", "/sys"],
)
def test_pseudo_filesystems(host: Any, old_board: _Board, path: str, node: str, kind: str) -> None:
    res = host.run(f"if test -{kind} {node}; then stat -c %d {path}; else exit 3; fi")
    assert res.rc != 3, f"{node} missing in the chroot"
    assert res.rc == 0, f"stat {path} in the chroot: rc {res.rc} {res.stderr.strip()}"
    outside = old_board.facts.devices.get(path, "")
    assert res.stdout.strip() == outside, f"{path} in the chroot is not the board's {path}"


def test_armhf_userspace(host: Any) -> None:
    python_bits = "/usr/bin/python3 -c 'import struct; print(struct.calcsize(\"P\")*8)'"
    out = host.check_output(f"/usr/bin/dpkg --print-architecture && {python_bits}")
    arch, _, bits = out.partition("\n")
    assert arch == "armhf", f"dpkg architecture {arch}, expected armhf"
    assert bits.strip() == "32", f"{bits.strip()}-bit userspace, expected 32"


def test_python3_runs(host: Any) -> None:
    out = host.check_output("/usr/bin/python3 -c 'import json, sys; print(sys.version_info[0])'")
    assert out == "3"


def test_identity_is_the_boards(host: Any, old_board: _Board) -> None:
    name = host.backend.get_hostname()
    words = host.check_output("/bin/cat /etc/hostname; echo; /bin/cat /etc/machine-id").split()
    assert len(words) == 2, f"/etc/hostname and /etc/machine-id in the chroot: {words}"
    assert words[0] == name, f"hostname {words[0]!r} in the chroot, expected {name!r}"
    assert re.fullmatch(r"[0-9a-f]{32}", words[1]), f"machine-id {words[1]!r} in the chroot"
    assert words[1] == old_board.facts.read("/etc/machine-id"), "chroot machine-id differs"


def test_resolver(host: Any, old_board: _Board) -> None:
    inside = host.run("/bin/cat /etc/resolv.conf").stdout
    assert inside == old_board.facts.files.get("/etc/resolv.conf"), "resolv.conf differs"
    code = "import socket; print(socket.getaddrinfo('localhost', 22)[0][4][0])"
    assert host.run(f'/usr/bin/python3 -c "{code}"').rc == 0, "name resolution fails"


def test_torch_imports(host: Any) -> None:
    res = host.run("/usr/bin/python3 -c 'import torch; print(torch.__version__)'")
    if "ModuleNotFoundError" in res.stderr:
        pytest.skip("skipped: no torch in image")
    assert res.rc == 0, res.stderr.strip().splitlines()[-1:]
