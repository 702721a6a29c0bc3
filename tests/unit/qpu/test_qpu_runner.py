"""The host-side runner reads config.txt outside the chroot and sends it in with the program."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from netroot import bootmode
from netroot.adapters.ssh import Result
from netroot.bootmode.sd import CHROOT
from netroot.inventory import Board
from netroot.qpu import bootconfig
from netroot.smoke.qpustage import run_qpu

CONFIG = "dtoverlay=vc4-kms-v3d\ngpu_mem=16\n"


@dataclass
class FakeSession:
    """Answers the config probe like a board with /boot/firmware; runs the program locally."""

    has_config: bool = True
    prefix: str = CHROOT  # what the program's command starts with
    commands: list[str] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    privileged: list[str] = field(default_factory=list)

    def run_privileged(
        self, command: str, stdin: bytes | None = None, timeout: float | None = None
    ) -> Result:
        self.privileged.append(command)
        return self.run(command, stdin=stdin, timeout=timeout)

    def run(self, command: str, stdin: bytes | None = None, timeout: float | None = None) -> Result:
        self.commands.append(command)
        if command == bootconfig.PROBE:
            if not self.has_config:
                return Result(1, b"", b"")
            return Result(0, f"/boot/firmware/config.txt\n{CONFIG}".encode(), b"")
        assert command.startswith(self.prefix) and stdin is not None
        self.programs.append(stdin.decode())
        done = subprocess.run([sys.executable, "-I", "-"], input=stdin, capture_output=True,
                              check=False, cwd=Path(__file__).parent)  # fmt: skip
        return Result(done.returncode, done.stdout, done.stderr)


def board(netboot: bool = False) -> Board:
    # only .name and .mode are read
    mode = bootmode.of("netboot" if netboot else "sd")
    return SimpleNamespace(name="pi-01", mode=mode)  # type: ignore[return-value]


def test_config_is_read_outside_the_chroot_and_travels_with_the_program() -> None:
    session = FakeSession()
    checks, summary = run_qpu(session, board(), "auto")
    assert session.commands[0] == bootconfig.PROBE  # no chroot prefix: the board's own /boot
    expected = repr(("/boot/firmware/config.txt", CONFIG))
    assert f"BOOT_CONFIG = {expected}" in session.programs[0]
    assert summary["mode"] == "auto" and checks  # this host has no VideoCore: stages skipped
    assert session.privileged == [session.commands[1]]  # the program as root, the probe not


def test_a_board_without_config_sends_none() -> None:
    session = FakeSession(has_config=False)
    run_qpu(session, board(), "auto")
    assert "BOOT_CONFIG = None" in session.programs[0]


def test_emulate_mode_reads_nothing_from_the_board() -> None:
    session = FakeSession()
    checks, summary = run_qpu(session, board(), "emulate")
    assert bootconfig.PROBE not in session.commands
    assert summary["emulated"] is True
    s3 = next(c for c in checks if c.check.startswith("qpu S3"))
    assert s3.status == "pass" and "gpu_mem=64" in s3.message  # the fake board's own config
    json.dumps(summary)


def test_a_netboot_board_runs_the_program_on_its_booted_root() -> None:
    session = FakeSession(prefix="/usr/bin/python3 -")
    run_qpu(session, board(netboot=True), "emulate")
    assert session.privileged == ["/usr/bin/python3 -"]  # no chroot: its root is the version
