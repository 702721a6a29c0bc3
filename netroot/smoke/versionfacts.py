"""What the built-in smoke checks read inside the board's version, in one round trip and one
python3 start.

Each in-version check used to send its own command or two through `sudo -n` and the chroot
wrapper (~0.6 s each on an emulated board) and four of them started python3 (~1-1.5 s each
under TCG). Here one plain-sh probe (facts.py's, run in the version) prints the files, device
numbers, command outputs and exit codes every check needs, and ONE python3 prints, as a JSON
line, what only Python can tell (pointer size, the manifest, name resolution, whether torch is
installed); `parse` turns it back into a `VersionSnapshot` that each check asserts on with its
own message. torch, when installed, is imported in a python3 of its own (started by the
first): a crashing import (SIGILL on the wrong CPU) must fail the torch check only, as when it
had a command of its own; where it is not installed that costs nothing.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from netroot.smoke import facts

MANIFEST = "/run/netroot/manifest.json"  # in the chroot: the mounted version's manifest
FILES = ("/etc/hostname", "/etc/machine-id", "/etc/resolv.conf")
# (path, a node that must exist in it, `test` flag for its kind): /dev bound shows /dev/null.
PSEUDO = (
    ("/dev", "/dev/null", "c"),
    ("/proc", "/proc/self/stat", "f"),
    ("/sys", "/sys/kernel", "d"),
)

# Quoted once with shlex for the probe's sh; the chroot wrapper and sudo quote the whole probe.
_PYTHON = """
import json, struct, sys
out = {"bits": struct.calcsize("P") * 8, "major": sys.version_info[0]}
def why(exc):
    return type(exc).__name__ + ": " + str(exc)
try:
    with open(MANIFEST) as f:
        d = json.load(f)
    out["manifest"] = [str(d["version"]), str(d["tree_hash"])]
except Exception as exc:
    out["manifest_error"] = why(exc)
try:
    import socket
    out["resolved"] = socket.getaddrinfo("localhost", 22)[0][4][0]
except Exception as exc:
    out["resolve_error"] = why(exc)
try:
    import importlib.util
    found = importlib.util.find_spec("torch") is not None
except Exception:
    found = True
if found:
    import subprocess
    run = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
    )
    out["torch"] = {"rc": run.returncode, "stderr": run.stderr[-4000:]}
print(json.dumps(out))
""".replace("MANIFEST", json.dumps(MANIFEST))


def probe_file(name: str) -> str:
    """The file the probe writes in the version's writable layer (its name: the board's)."""
    return f"/var/tmp/.netroot-probe-{name}"


def probe(token: str, name: str, keep: bool) -> str:
    """The in-version command: plain sh. `keep`: leave the written probe file for the board's
    own read, which looks for it in the shared export (a leak) and then removes it."""
    path = shlex.quote(probe_file(name))
    commands = [
        ("arch", "/usr/bin/dpkg --print-architecture"),
        ("write", f"echo {shlex.quote(name)} > {path}"),
        *((f"present:{p}", f"test -{kind} {node}") for p, node, kind in PSEUDO),
        ("python", f"/usr/bin/python3 -c {shlex.quote(_PYTHON)}"),
    ]
    if not keep:
        commands.append(("cleanup", f"rm -f {path}"))
    return facts.probe(token, FILES, commands)


class VersionProbeFailed(AssertionError):
    """The probe did not run in the version (no chroot, sudo refused, output cut short)."""


@dataclass(frozen=True)
class VersionSnapshot:
    facts: facts.Snapshot
    python: dict[str, Any] | None  # python3's JSON line; None when python3 did not print one

    def python_facts(self) -> dict[str, Any]:
        """python3's facts; AssertionError with python3's own last words when it did not run."""
        if self.python is None:
            rc = self.facts.rcs.get("python", "?")
            last = self.facts.outputs.get("python", "").strip().splitlines()[-1:] or ["no output"]
            raise AssertionError(f"python3 does not run in the version: rc {rc}: {last[0]}")
        return self.python


def parse(token: str, rc: int, stdout: str, stderr: str) -> VersionSnapshot:
    """Pure: the in-version probe's result back into facts. VersionProbeFailed, with the
    command's own error, when the probe did not run to its end."""
    try:
        snapshot = facts.parse(token, stdout, where="in the version")
    except facts.FactsError as exc:
        last = stderr.strip().splitlines()[-1:] or [str(exc)]
        raise VersionProbeFailed(f"cannot read the version: rc {rc} {last[0]}") from None
    python = None
    for line in reversed(snapshot.outputs.get("python", "").splitlines()):
        if line.startswith("{"):
            try:
                loaded = json.loads(line)
            except json.JSONDecodeError:
                break
            python = loaded if isinstance(loaded, dict) else None
            break
    if snapshot.rcs.get("python") != 0:
        python = None
    return VersionSnapshot(snapshot, python)
