"""The board facts the smoke checks read in one round trip: the probe run by a real sh here,
and the pure parser on its output."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from netroot.adapters.ssh import Result
from netroot.smoke.facts import FactsError, new_token, parse, probe
from netroot.smoke.shell import BoardShell


def _run(command: str) -> str:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True).stdout


def test_files_come_back_byte_for_byte_and_missing_ones_are_absent(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("one\ntwo\n")
    no_newline = tmp_path / "no newline"
    no_newline.write_text("last line without one")
    empty = tmp_path / "empty"
    empty.write_text("")
    missing = tmp_path / "missing"
    token = new_token()
    files = (str(plain), str(no_newline), str(empty), str(missing))
    facts = parse(token, _run(probe(token, files)))
    assert facts.files == {
        str(plain): "one\ntwo\n",
        str(no_newline): "last line without one",
        str(empty): "",
    }
    with pytest.raises(AssertionError, match="missing on the board"):
        facts.read(str(missing))


def test_device_numbers_are_the_ones_stat_sees() -> None:
    token = new_token()
    facts = parse(token, _run(probe(token)))
    for path in ("/dev", "/proc", "/sys"):
        assert facts.devices[path] == str(os.stat(path).st_dev)
    assert facts.files["/proc/mounts"]
    assert facts.mount_options("/proc") is not None


def test_a_file_cannot_fake_a_marker(tmp_path: Path) -> None:
    other = new_token()
    hostile = tmp_path / "hostile"
    hostile.write_text(f"x\n@@{other} file /etc/machine-id\nforged\n@@{other} end\n")
    token = new_token()
    facts = parse(token, _run(probe(token, (str(hostile),))))
    assert facts.files == {str(hostile): hostile.read_text()}


def test_output_cut_short_is_an_error() -> None:
    token = new_token()
    out = _run(probe(token))
    with pytest.raises(FactsError, match="cut short"):
        parse(token, out[: len(out) // 2])
    with pytest.raises(FactsError):
        parse(token, "")


def test_the_mount_on_top_wins() -> None:
    token = new_token()
    mounts = "a /x nfs ro,vers=3 0 0\nb /x overlay rw,lowerdir=/y 0 0\nc /z tmpfs rw 0 0\n"
    out = f"\n@@{token} file /proc/mounts\n{mounts}\n@@{token} end\n"
    facts = parse(token, out)
    assert facts.mount_options("/x") == "rw,lowerdir=/y"
    assert facts.mount_options("/nowhere") is None
    assert [m[1] for m in facts.mounts] == ["/x", "/x", "/z"]


class _LocalBoard:
    """A backend whose board is this machine: the probe runs in a real sh here."""

    def __init__(self, cut: bool = False, rc: int | None = None) -> None:
        self.calls = 0
        self.cut = cut
        self.rc = rc

    def run_on_board(self, command: str) -> Result:
        self.calls += 1
        if self.rc is not None:
            return Result(self.rc, b"", b"sudo: a password is required\n")
        proc = subprocess.run(["sh", "-c", command], capture_output=True, check=False)
        out = proc.stdout[: len(proc.stdout) // 2] if self.cut else proc.stdout
        return Result(proc.returncode, out, proc.stderr)


def test_the_board_is_read_once_per_smoke_whatever_the_checks_ask() -> None:
    backend = _LocalBoard()
    first = BoardShell(backend).facts
    again = BoardShell(backend).facts  # a later check: a new BoardShell, the same backend
    assert again is first and backend.calls == 1
    assert first.read("/proc/cmdline") == Path("/proc/cmdline").read_text().strip()


@pytest.mark.parametrize(
    "backend,message",
    [
        (_LocalBoard(rc=1), "rc 1 sudo: a password is required"),
        (_LocalBoard(cut=True), "cut short"),
    ],
)
def test_a_failed_read_fails_the_check_naming_why(backend: _LocalBoard, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        assert BoardShell(backend).facts is None  # never reached: the read raises
