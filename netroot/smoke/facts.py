"""What the smoke checks read on the board itself (outside the chroot), in one round trip.

Every command a check sends costs an SSH channel and a `sudo -n` on the board (on an emulated
board ~0.3-0.5 s each, mostly sudo); the checks used to read the same few files a dozen times.
A fact here is a command plus a pure parser (pyinfra's way): `probe(token)` is a plain-sh line
that prints each file between marker lines, `parse(token, stdout)` turns it back into
`BoardSnapshot`. The token is random per read, so no file's content can fake a marker.
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass, field
from typing import Any, Protocol

MOUNTED = "/run/netroot/mounted"  # the version netroot-mount mounted
ASSIGNED = "/etc/netroot/assigned"  # the version the board was provisioned with
FILES = (
    "/proc/mounts",
    MOUNTED,
    ASSIGNED,
    "/etc/machine-id",
    "/etc/resolv.conf",
    "/proc/cmdline",
)
PSEUDO = ("/dev", "/proc", "/sys")  # their device numbers: the chroot's must be the same


class BoardResult(Protocol):
    """What a command on the board returns (netroot.adapters.ssh.Result)."""

    @property
    def rc(self) -> int: ...
    @property
    def stdout(self) -> bytes: ...
    @property
    def stderr(self) -> bytes: ...


class FactsError(Exception):
    """The probe's output is not what `probe` prints (cut short, or no probe ran)."""


@dataclass(frozen=True)
class BoardSnapshot:
    files: dict[str, str]  # path -> content, exactly; a missing or unreadable file is absent
    devices: dict[str, str] = field(default_factory=dict)  # /dev, /proc, /sys -> `stat -c %d`

    def read(self, path: str) -> str:
        """A file's content, stripped; AssertionError naming the file when the board has none."""
        if path not in self.files:
            raise AssertionError(f"{path} missing on the board")
        return self.files[path].strip()

    @property
    def mounts(self) -> list[list[str]]:
        """/proc/mounts, one list of fields per line."""
        return [line.split() for line in self.files.get("/proc/mounts", "").splitlines()]

    def mount_options(self, mountpoint: str) -> str | None:
        """The options of the mount on top at `mountpoint`, None when nothing is mounted there."""
        found = None
        for fields in self.mounts:
            if len(fields) > 3 and fields[1] == mountpoint:
                found = fields[3]  # the last one listed is the one on top
        return found


def new_token() -> str:
    return secrets.token_hex(8)


def probe(token: str, files: tuple[str, ...] = FILES) -> str:
    """The board-side command (plain sh, run as root) that prints every fact once."""
    mark = f"@@{token}"
    paths = " ".join(shlex.quote(f) for f in files)
    pseudo = " ".join(PSEUDO)
    return (
        f"for f in {paths}; do "
        f'if [ -r "$f" ]; then printf \'\\n{mark} file %s\\n\' "$f"; cat "$f"; '
        f"else printf '\\n{mark} missing %s\\n' \"$f\"; fi; done; "
        f"printf '\\n{mark} devices\\n'; stat -c '%n %d' {pseudo}; printf '\\n{mark} end\\n'"
    )


def parse(token: str, stdout: str) -> BoardSnapshot:
    """Pure: the probe's output back into facts. FactsError when it was cut short."""
    pieces = stdout.split(f"\n@@{token} ")
    if len(pieces) < 2 or pieces[-1].strip() != "end":
        raise FactsError("the board's facts were cut short (no end marker)")
    files: dict[str, str] = {}
    devices: dict[str, str] = {}
    for piece in pieces[1:-1]:
        header, _, body = piece.partition("\n")
        kind, _, path = header.partition(" ")
        if kind == "file":
            files[path] = body
        elif kind == "devices":
            for line in body.splitlines():
                name, _, number = line.rpartition(" ")
                if name:
                    devices[name] = number
        elif kind != "missing":
            raise FactsError(f"unexpected section {header!r} in the board's facts")
    return BoardSnapshot(files, devices)


class BoardShell:
    """Commands on the board itself (outside the chroot), through the backend it is handed
    (the netroot:// testinfra backend: its `run_on_board`)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def run(self, command: str) -> BoardResult:
        result: BoardResult = self._backend.run_on_board(command)
        return result

    @property
    def facts(self) -> BoardSnapshot:
        """The files the checks read on the board, read once per board in one round trip
        (netroot/smoke/facts.py) and kept on the backend for the board's later checks."""
        cached: BoardSnapshot | None = getattr(self._backend, "_netroot_facts", None)
        if cached is None:
            token = new_token()
            res = self.run(probe(token))
            if res.rc != 0:
                err = res.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
                raise AssertionError(f"could not read the board's files: rc {res.rc} {err[0]}")
            try:
                cached = parse(token, res.stdout.decode(errors="replace"))
            except FactsError as exc:
                raise AssertionError(str(exc)) from None
            self._backend._netroot_facts = cached
        return cached
