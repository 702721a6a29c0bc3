"""The in-version probe (netroot/smoke/versionfacts.py): run by a real sh and python3 here, its
parser, and each built-in check failing, with its own message, on crafted probe output."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from netroot import bootmode
from netroot.adapters.ssh import Result
from netroot.smoke import versionfacts
from netroot.smoke.checks import test_netroot_builtin as checks
from netroot.smoke.checks.bootchecks import CHECKS as MODE_CHECKS
from netroot.smoke.facts import new_token
from netroot.smoke.shell import BoardShell, version_facts

V = "0123456789abcdef"
MID = "f" * 32


def _sh(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)


def test_the_probe_reads_this_machine_in_one_sh_and_cleans_up(tmp_path: Path) -> None:
    token = new_token()
    name = f"unit-{token}"
    proc = _sh(versionfacts.probe(token, name, keep=False))
    snap = versionfacts.parse(token, proc.returncode, proc.stdout, proc.stderr)
    python = snap.python_facts()
    assert python["major"] == 3 and python["bits"] in (32, 64)
    assert "manifest_error" in python  # no netroot manifest on this machine
    assert snap.facts.rc("write") == 0 and snap.facts.rc("present:/proc") == 0
    assert snap.facts.devices["/proc"] == str(Path("/proc").stat().st_dev)
    assert not Path(versionfacts.probe_file(name)).exists()  # keep=False: removed


def test_a_probe_that_did_not_run_names_the_wrappers_error() -> None:
    with pytest.raises(versionfacts.VersionProbeFailed, match="rc 1 netroot-chroot: no version"):
        versionfacts.parse("t", 1, "", "netroot-chroot: no version mounted on /run/netroot/root\n")


def test_python3_that_does_not_start_fails_with_its_last_words() -> None:
    token = new_token()
    out = _craft(token, python=("exec format error: /usr/bin/python3\n", 126))
    snap = versionfacts.parse(token, 0, out, "")
    with pytest.raises(AssertionError, match="rc 126: exec format error"):
        snap.python_facts()


# --- crafted output, in the probe's own format --------------------------------------------


def _python(**changes: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {"bits": 32, "major": 3, "manifest": [V, "h" * 64]}
    facts["resolved"] = "127.0.0.1"
    facts.update(changes)
    return {k: v for k, v in facts.items() if v is not None}


def _craft(
    token: str,
    files: dict[str, str] | None = None,
    devices: dict[str, str] | None = None,
    python: tuple[str, int] | None = None,
    **rcs: int | tuple[str, int],
) -> str:
    """The probe's output: files, devices, then commands (name -> rc, or (output, rc))."""
    mark = f"\n@@{token}"
    out = ""
    for path, content in (files or {}).items():
        out += f"{mark} file {path}\n{content}"
    out += f"{mark} devices\n" + "".join(f"{p} {d}\n" for p, d in (devices or {}).items())
    commands: dict[str, int | tuple[str, int]] = dict(rcs)
    if python is not None:
        commands["python"] = python
    for name, value in commands.items():
        text, rc = value if isinstance(value, tuple) else ("", value)
        name = name.replace("_", ":", 1) if name.startswith("present_") else name
        out += f"{mark} cmd {name}\n{text}{mark} rc {name} {rc}\n"
    return out + f"{mark} end\n"


@dataclass
class _Board:
    """A board's state as the two probes report it; each field can be broken by a test."""

    name: str = "pi-01"
    mode: str = "sd"
    arch: tuple[str, int] = ("armhf\n", 0)
    write: int = 0
    present: dict[str, int] = field(default_factory=lambda: {"/dev": 0, "/proc": 0, "/sys": 0})
    inside_devices: dict[str, str] = field(
        default_factory=lambda: {"/dev": "5", "/proc": "4", "/sys": "20"}
    )
    board_devices: dict[str, str] = field(
        default_factory=lambda: {"/dev": "5", "/proc": "4", "/sys": "20"}
    )
    python: dict[str, Any] = field(default_factory=_python)
    inside_files: dict[str, str] = field(
        default_factory=lambda: {
            "/etc/hostname": "pi-01\n",
            "/etc/machine-id": MID + "\n",
            "/etc/resolv.conf": "nameserver 10.77.0.1\n",
        }
    )
    board_files: dict[str, str] = field(
        default_factory=lambda: {
            "/proc/mounts": (
                "10.77.0.2:/export /run/netroot/shared nfs ro,vers=4.1 0 0\n"
                f"netroot /run/netroot/root overlay rw,lowerdir=/run/netroot/shared/versions/{V}"
                ",upperdir=/var/lib/netroot/layers/x/upper 0 0\n"
            ),
            "/run/netroot/mounted": V + "\n",
            "/etc/netroot/assigned": V + "\n",
            "/etc/machine-id": MID + "\n",
            "/etc/resolv.conf": "nameserver 10.77.0.1\n",
            "/proc/cmdline": "console=ttyAMA0\n",
        }
    )
    leaked: int = 1
    shared_writable: int = 1
    version_rc: int = 0  # the chroot wrapper's own exit (1: it could not enter the version)


class _Backend:
    """The netroot backend's two ways in, answered from a `_Board` (the token is the probe's)."""

    def __init__(self, state: _Board) -> None:
        self.state = state
        self.board = SimpleNamespace(name=state.name, mode=bootmode.of(state.mode))
        self.sent: list[str] = []

    def get_hostname(self) -> str:
        return self.state.name

    def run(self, command: str) -> Any:
        self.sent.append("version")
        s = self.state
        if s.version_rc:
            return SimpleNamespace(rc=s.version_rc, stdout="", stderr="netroot-chroot: no version")
        token = re.search(r"@@([0-9a-f]+)", command)
        assert token is not None
        present = {f"present_{p}": rc for p, rc in s.present.items()}
        out = _craft(
            token.group(1), s.inside_files, s.inside_devices, (json.dumps(s.python) + "\n", 0),
            arch=s.arch, write=s.write, **present,
        )  # fmt: skip
        return SimpleNamespace(rc=0, stdout=out, stderr="")

    def run_on_board(self, command: str) -> Result:
        self.sent.append("board")
        token = re.search(r"@@([0-9a-f]+)", command)
        assert token is not None
        s = self.state
        out = _craft(
            token.group(1), s.board_files, s.board_devices,
            leaked=s.leaked, shared_writable=s.shared_writable, cleanup=0,
        )  # fmt: skip
        return Result(0, out.encode(), b"")


CHECKS: dict[str, Callable[[Any, BoardShell], None]] = {
    "version": lambda h, b: checks.test_assigned_version_mounted(h, b, {}),
    "shared": checks.test_shared_root_read_only,
    "writable": checks.test_writable_layer_is_the_boards,
    "/dev": lambda h, b: checks.test_pseudo_filesystems(h, "/dev", "/dev/null", "c"),
    "/proc": lambda h, b: checks.test_pseudo_filesystems(h, "/proc", "/proc/self/stat", "f"),
    "/sys": lambda h, b: checks.test_pseudo_filesystems(h, "/sys", "/sys/kernel", "d"),
    "armhf": lambda h, b: checks.test_armhf_userspace(h),
    "python3": lambda h, b: checks.test_python3_runs(h),
    "identity": checks.test_identity_is_the_boards,
    "resolver": checks.test_resolver,
}


def _run(state: _Board) -> dict[str, str]:
    """Every built-in check on one board: check -> "pass" or its failure message."""
    backend = _Backend(state)
    host = SimpleNamespace(backend=backend)
    results = {}
    for name, check in CHECKS.items():
        try:
            check(host, BoardShell(backend))
            results[name] = "pass"
        except AssertionError as exc:
            results[name] = str(exc).splitlines()[0]
    assert backend.sent == ["version", "board"]  # one read each, whatever the checks asked
    return results


def test_a_sound_board_passes_every_check_in_two_round_trips() -> None:
    assert set(_run(_Board()).values()) == {"pass"}


def _break(field_name: str, value: Any) -> _Board:
    state = _Board()
    current = getattr(state, field_name)
    if isinstance(current, dict) and isinstance(value, dict):
        value = {k: v for k, v in {**current, **value}.items() if v is not None}
    setattr(state, field_name, value)
    return state


BOARD_MOUNTS = _Board().board_files["/proc/mounts"]


@pytest.mark.parametrize(
    "state,check,message",
    [
        (_break("board_files", {"/run/netroot/mounted": ""}), "version", "is empty"),
        (_break("board_files", {"/run/netroot/mounted": "aaaa\n"}), "version",
         "mounted version aaaa"),
        (_break("python", {"manifest": None, "manifest_error": "FileNotFoundError: x"}), "version",
         "cannot read /run/netroot/manifest.json in the chroot: FileNotFoundError"),
        (_break("python", {"manifest": ["bbbb", "h"]}), "version", "manifest is version bbbb"),
        (_break("board_files", {"/proc/mounts": BOARD_MOUNTS.replace(V, "cccc")}), "version",
         "chroot root is not over versions/" + V),
        (_break("board_files", {"/proc/mounts": BOARD_MOUNTS.split("\n", 1)[1]}), "shared",
         "is not mounted"),
        (_break("board_files", {"/proc/mounts": BOARD_MOUNTS.replace("nfs ro,", "nfs rw,")}),
         "shared", "expected ro"),
        (_break("shared_writable", 0), "shared", "could write into the shared export"),
        (_break("write", 1), "writable", "the chroot's root is not writable"),
        (_break("leaked", 0), "writable", "a write in the chroot reached the shared version"),
        (_break("present", {"/dev": 1}), "/dev", "/dev/null missing in the chroot"),
        (_break("inside_devices", {"/dev": "77"}), "/dev",
         "/dev in the chroot is not the board's /dev (not bound)"),
        (_break("inside_devices", {"/sys": None}), "/sys", "stat /sys in the chroot failed"),
        (_break("inside_devices", {"/proc": "3"}), "/proc",
         "/proc in the chroot is not the board's"),
        (_break("arch", ("amd64\n", 0)), "armhf", "dpkg architecture amd64, expected armhf"),
        (_break("arch", ("dpkg: not found\n", 127)), "armhf", "rc 127 dpkg: not found"),
        (_break("python", {"bits": 64}), "armhf", "64-bit userspace, expected 32"),
        (_break("python", {"major": 2}), "python3", "assert 2 == 3"),
        (_break("inside_files", {"/etc/hostname": "pi-02\n"}), "identity", "hostname 'pi-02'"),
        (_break("inside_files", {"/etc/machine-id": None}), "identity", "/etc/machine-id in the"),
        (_break("inside_files", {"/etc/machine-id": "e" * 32}), "identity",
         "chroot machine-id is not the board's"),
        (_break("inside_files", {"/etc/resolv.conf": "nameserver 8.8.8.8\n"}), "resolver",
         "resolv.conf is not the board's"),
        (_break("inside_files", {"/etc/resolv.conf": None}), "resolver", "not the board's"),
        (_break("python", {"resolved": None, "resolve_error": "gaierror: [Errno -2]"}),
         "resolver", "name resolution fails: gaierror"),
    ],
)  # fmt: skip
def test_each_check_fails_on_its_own_fault_only(state: _Board, check: str, message: str) -> None:
    results = _run(state)
    assert message in results[check], results[check]
    others = {k: v for k, v in results.items() if k != check and v != "pass"}
    assert not others, others  # one fault, one failed check: the probe is shared, not the blame


def test_a_version_that_cannot_be_entered_fails_every_in_version_check() -> None:
    results = _run(_break("version_rc", 1))
    for name in ("writable", "/dev", "/proc", "/sys", "armhf", "python3", "identity", "resolver"):
        assert "cannot read the version: rc 1 netroot-chroot: no version" in results[name], name
    assert results["shared"] == "pass"  # the board's own mount is still checked


def _torch(torch: dict[str, Any] | None) -> Any:
    state = _Board(python=_python(torch=torch))
    return SimpleNamespace(backend=_Backend(state))


def test_torch_skips_when_not_installed_or_a_dependency_is_missing() -> None:
    for torch in (None, {"rc": 1, "stderr": "ModuleNotFoundError: No module named 'numpy'\n"}):
        with pytest.raises(pytest.skip.Exception, match="no torch in image"):
            checks.test_torch_imports(_torch(torch))


def test_torch_that_crashes_fails_the_torch_check_only() -> None:
    with pytest.raises(AssertionError, match="Illegal instruction"):
        checks.test_torch_imports(_torch({"rc": -4, "stderr": "Illegal instruction\n"}))
    with pytest.raises(AssertionError, match="rc -4"):
        checks.test_torch_imports(_torch({"rc": -4, "stderr": ""}))
    checks.test_torch_imports(_torch({"rc": 0, "stderr": ""}))  # installed and imports: pass


def test_version_facts_are_read_once_per_board() -> None:
    backend = _Backend(_Board())
    host = SimpleNamespace(backend=backend)
    assert version_facts(host) is version_facts(host)
    assert backend.sent == ["version"]


def test_a_netboot_board_reads_the_same_probe_and_only_removes_the_probe_file() -> None:
    mounts = (
        "10.77.0.2:/srv/netroot/nb/versions/" + V + " /run/rootfs nfs ro,vers=3 0 0\n"
        "overlay / overlay rw,lowerdir=/run/rootfs 0 0\n"
    )
    state = _Board(mode="netboot")
    state.board_files = {
        **state.board_files,
        "/proc/mounts": mounts,
        "/proc/cmdline": f"nfsroot=10.77.0.2:/srv/netroot/nb/versions/{V} systemd.machine_id={MID}",
    }
    results = _run(state)
    assert set(results.values()) == {"pass"}, results
    assert [n for n, _ in MODE_CHECKS["netboot"].board_commands("pi-01")] == ["cleanup"]
    state.board_files["/proc/mounts"] = mounts.replace("overlay / overlay", "/dev/x / ext4")
    assert "/ is not an overlay" in _run(state)["writable"]
