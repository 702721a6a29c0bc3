"""Install a dnsmasq config only after `dnsmasq --test` accepted it (the side-effecting half).

An invalid config is refused with dnsmasq's own message and the installed file is left byte for
byte as it was, so a server keeps serving with the old one. dnsmasq rereads its config only when
restarted (SIGHUP rereads hosts files, not dnsmasq.conf): whoever runs it restarts it after a
change this returns True for.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from netroot.errors import UsageError
from netroot.fsutil import atomic_write
from netroot.run import run


class ConfigRefused(UsageError):
    """dnsmasq --test rejected a rendered config; the installed one was kept."""


def check(text: str, dnsmasq: str = "dnsmasq") -> str:
    """'' when `dnsmasq --test` accepts `text`, else dnsmasq's message."""
    with tempfile.NamedTemporaryFile("w", prefix="netroot-dnsmasq-", suffix=".conf") as conf:
        conf.write(text)
        conf.flush()
        proc = run([dnsmasq, "--test", f"--conf-file={conf.name}"], check=False)
    if proc.returncode == 0:
        return ""
    lines = (proc.stderr + proc.stdout).decode(errors="replace").strip().splitlines()
    return (lines[-1] if lines else f"exit {proc.returncode}").replace(conf.name, "<config>")


def install(text: str, dest: Path, dnsmasq: str = "dnsmasq") -> bool:
    """Write `text` to `dest` if dnsmasq accepts it; False when `dest` already holds it."""
    if dest.is_file() and dest.read_text() == text:
        return False
    problem = check(text, dnsmasq)
    if problem:
        raise ConfigRefused(
            f"dnsmasq refused the new config ({problem}); {dest} was kept as it was",
            "fix the netboot settings in the inventory and run again",
        )
    atomic_write(dest, text)
    return True
