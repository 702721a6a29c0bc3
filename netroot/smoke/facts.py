"""What the smoke checks read on the board itself (outside the chroot), in one round trip.

Every command a check sends costs an SSH channel and a `sudo -n` on the board (on an emulated
board ~0.3-0.5 s each, mostly sudo); the checks used to read the same few files a dozen times.
A fact here is a command plus a pure parser (pyinfra's way): `probe(token)` is a plain-sh line
that prints each file between marker lines, and each extra command's output and exit code;
`parse(token, stdout)` turns it back into a `Snapshot`. The token is random per read, so no
file's content or command's output can fake a marker. The same probe, run inside the version,
is what the in-version checks read (netroot/smoke/versionfacts.py).
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

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
class Snapshot:
    files: dict[str, str]  # path -> content, exactly; a missing or unreadable file is absent
    devices: dict[str, str] = field(default_factory=dict)  # /dev, /proc, /sys -> `stat -c %d`
    outputs: dict[str, str] = field(default_factory=dict)  # command name -> stdout and stderr
    rcs: dict[str, int] = field(default_factory=dict)  # command name -> its exit code
    where: str = "on the board"

    def read(self, path: str) -> str:
        """A file's content, stripped; AssertionError naming the file when the board has none."""
        if path not in self.files:
            raise AssertionError(f"{path} missing {self.where}")
        return self.files[path].strip()

    def rc(self, name: str) -> int:
        """The exit code of the probe's command `name` (ValueError: the probe ran no such one)."""
        if name not in self.rcs:
            raise ValueError(f"the probe ran no command {name!r}")
        return self.rcs[name]

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


BoardSnapshot = Snapshot  # the board's own files, outside the chroot


def new_token() -> str:
    return secrets.token_hex(8)


def probe(
    token: str, files: tuple[str, ...] = FILES, commands: Sequence[tuple[str, str]] = ()
) -> str:
    """The command (plain sh, run as root) that prints every fact once: the files, the device
    numbers of /dev, /proc and /sys, then each (name, shell command)'s output and exit code,
    in order (a command's stderr goes with its output)."""
    mark = f"@@{token}"
    paths = " ".join(shlex.quote(f) for f in files)
    pseudo = " ".join(PSEUDO)
    parts = [
        f"for f in {paths}; do "
        f'if [ -r "$f" ]; then printf \'\\n{mark} file %s\\n\' "$f"; cat "$f"; '
        f"else printf '\\n{mark} missing %s\\n' \"$f\"; fi; done",
        f"printf '\\n{mark} devices\\n'; stat -c '%n %d' {pseudo}",
    ]
    for name, command in commands:
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"a probe command's name is one word, not {name!r}")
        parts.append(
            f"printf '\\n{mark} cmd {name}\\n'; {{ {command}\n}} 2>&1 </dev/null; "
            f"printf '\\n{mark} rc {name} %s\\n' \"$?\""
        )
    parts.append(f"printf '\\n{mark} end\\n'")
    return "; ".join(parts)


def parse(token: str, stdout: str, where: str = "on the board") -> Snapshot:
    """Pure: the probe's output back into facts. FactsError when it was cut short."""
    pieces = stdout.split(f"\n@@{token} ")
    if len(pieces) < 2 or pieces[-1].strip() != "end":
        raise FactsError(f"the facts {where} were cut short (no end marker)")
    files: dict[str, str] = {}
    devices: dict[str, str] = {}
    outputs: dict[str, str] = {}
    rcs: dict[str, int] = {}
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
        elif kind == "cmd":
            outputs[path] = body
        elif kind == "rc":
            name, _, code = path.rpartition(" ")
            if name not in outputs or not code.isdigit():
                raise FactsError(f"unexpected section {header!r} in the facts {where}")
            rcs[name] = int(code)
        elif kind != "missing":
            raise FactsError(f"unexpected section {header!r} in the facts {where}")
    return Snapshot(files, devices, outputs, rcs, where)
