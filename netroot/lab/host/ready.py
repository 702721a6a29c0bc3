"""Is a lab host ready? A TCP probe for the SSH banner, then a real, host-key-checked SSH login."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from netroot.run import run


def ssh_banner(address: str, timeout: float = 20.0) -> bool:
    """True if something on address:22 speaks SSH (cheap; no login).

    The timeout is generous: a busy emulated board takes seconds to fork sshd for a connection.
    """
    try:
        with socket.create_connection((address, 22), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def ssh_argv(
    address: str, key: Path, known_hosts: Path, *command: str, user: str = "root"
) -> list[str]:
    """ssh to a lab host with the lab's key, checking its host key against the lab's known_hosts."""
    return [
        "ssh",
        "-i",
        str(key),
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        f"UserKnownHostsFile={known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=30",
        "-o",
        "LogLevel=ERROR",
        f"{user}@{address}",
        *command,
    ]


def ssh_ok(address: str, key: Path, known_hosts: Path, user: str = "root") -> bool:
    """A full login that runs `true`: proves sshd, the lab key and the host key all agree."""
    proc = run(ssh_argv(address, key, known_hosts, "true", user=user), check=False, timeout=60)
    return proc.returncode == 0


def wait_all(
    hosts: dict[str, str],
    users: dict[str, str],
    key: Path,
    known_hosts: Path,
    timeout: float,
    on_ready: Callable[[str, float], None],
    alive: Callable[[str], bool],
) -> list[str]:
    """Poll every host (name -> address) at once until it logs in; returns those never ready.

    One poller per host, so a slow board never delays noticing a fast one. A poller gives up
    early when its host's process died (`alive` false): waiting longer cannot help.
    """
    start = time.monotonic()
    lock = threading.Lock()

    def poll(name: str, address: str) -> bool:
        while time.monotonic() - start < timeout:
            if not alive(name):
                return False
            if ssh_banner(address) and ssh_ok(address, key, known_hosts, users[name]):
                with lock:
                    on_ready(name, time.monotonic() - start)
                return True
            time.sleep(0.5)
        return False

    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        results = dict(zip(hosts, pool.map(poll, hosts.keys(), hosts.values()), strict=True))
    return sorted(name for name, ok in results.items() if not ok)
