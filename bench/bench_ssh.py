"""What netroot's own SSH costs per command (not a test): OpenSSH with one multiplexing master
per session, against a fresh ssh per command and against paramiko (netroot's previous client).

    sudo .venv/bin/python -m bench.bench_ssh [--commands 20] [--runs 3] [--power-off]

Needs root (a real sshd in a network namespace, tests/integration/provision_hosts.py). For
each client, in the same run against the same sshd: the first command (connection, key
exchange, login) and the median of the next commands. Ratios against paramiko's, so they carry
over to a board (whose round trips are slower, for every client alike). With --power-off,
also how long a session takes to say that a board powered off a moment ago (its ARP entry still
valid) is unreachable, against ssh alone with the same retries (netroot before issue 38: it
waits out ConnectTimeout, then tries again), and how long a whole `netroot status` of that board
takes (`status_s`: the process, Python's start included). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netroot.adapters.ssh import Session, Unreachable
from netroot.errors import Exit
from netroot.sshtarget import SshTarget, ssh_argv, ssh_said
from tests.integration.provision_hosts import NetnsHost, netns_host, write_inventory


def _timed(first: Callable[[], Any], then: Callable[[], Any], commands: int) -> dict[str, float]:
    t0 = time.monotonic()
    first()
    connect = time.monotonic() - t0
    trips = []
    for _ in range(commands):
        t1 = time.monotonic()
        then()
        trips.append(time.monotonic() - t1)
    return {"first_s": connect, "command_s": statistics.median(trips)}


def _openssh(target: SshTarget, commands: int) -> dict[str, float]:
    with Session(target) as session:
        return _timed(lambda: session.run("true"), lambda: session.run("true"), commands)


def _fresh(host: NetnsHost, target: SshTarget, commands: int) -> dict[str, float]:
    argv = [*ssh_argv(target), host.address, "true"]
    run = lambda: subprocess.run(argv, capture_output=True, check=True)  # noqa: E731
    return _timed(run, run, commands)


def _paramiko(host: NetnsHost, commands: int) -> dict[str, float]:
    import paramiko

    client = paramiko.SSHClient()
    client.load_host_keys(str(host.known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())

    def command() -> None:
        _, out, _ = client.exec_command("true")
        out.channel.recv_exit_status()

    def connect() -> None:
        client.connect(host.address, username="root", key_filename=str(host.key))
        command()

    try:
        return _timed(connect, command, commands)
    finally:
        client.close()


def _status_powered_off() -> float:
    """Seconds `netroot status` takes, a whole process, over a board powered off a moment ago."""
    with tempfile.TemporaryDirectory() as tmp, netns_host(Path(tmp)) as board:
        target = SshTarget("off", board.address, 22, "root", str(board.key), str(board.known_hosts))
        with Session(target) as session:
            session.run("true")  # the board answered: its ARP entry is fresh
        (Path(tmp) / "root").mkdir()
        pi = {"ansible_host": board.address, "ansible_user": "root",
              "ansible_private_key_file": str(board.key),
              "netroot_known_hosts": str(board.known_hosts)}  # fmt: skip
        server = {"ansible_host": "127.0.0.1", "netroot_export_root": str(Path(tmp) / "root")}
        inventory = write_inventory(Path(tmp) / "inventory.yml", {"all": {"children": {
            "nfs_servers": {"hosts": {"nfs-01": server}},
            "boards": {"hosts": {"pi-off": pi}}}}})  # fmt: skip
        board.exec("ip", "addr", "del", f"{board.address}/24", "dev", "eth0")
        t0 = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "netroot", "status", "-i", str(inventory)],
            capture_output=True, text=True, env={**os.environ, "NETROOT_HOME": tmp},
            cwd=tmp,  # `python -m` puts the working directory first: netroot from PYTHONPATH
        )  # fmt: skip
        took = time.monotonic() - t0
        assert done.returncode == Exit.UNREACHABLE and "powered off" in done.stderr, done.stderr
        return took


def _powered_off(watched: bool) -> float:
    """Seconds until a board powered off a moment ago is reported unreachable."""
    with tempfile.TemporaryDirectory() as tmp, netns_host(Path(tmp)) as board:
        target = SshTarget("off", board.address, 22, "root", str(board.key), str(board.known_hosts))
        with Session(target) as session:
            session.run("true")  # the board answered: its ARP entry is fresh
        board.exec("ip", "addr", "del", f"{board.address}/24", "dev", "eth0")
        t0 = time.monotonic()
        if watched:
            try:
                with Session(target) as session:
                    session.run("true")
            except Unreachable:
                pass
            return time.monotonic() - t0
        for _ in range(target.retries + 1):  # ssh alone, retried as Session retries
            done = subprocess.run([*ssh_argv(target), board.address, "true"], capture_output=True)
            if "Connection timed out" not in ssh_said(done.stderr.decode()):
                break
        return time.monotonic() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--power-off", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, netns_host(Path(tmp)) as host:
        target = SshTarget("bench", host.address, 22, "root", str(host.key), str(host.known_hosts))
        rows: dict[str, list[dict[str, float]]] = {"openssh": [], "fresh": [], "paramiko": []}
        for _ in range(args.runs):
            rows["openssh"].append(_openssh(target, args.commands))
            rows["fresh"].append(_fresh(host, target, args.commands))
            rows["paramiko"].append(_paramiko(host, args.commands))
    result: dict[str, Any] = {
        name: {k: statistics.median(r[k] for r in runs) for k in ("first_s", "command_s")}
        for name, runs in rows.items()
    }
    base = result["paramiko"]
    for name in ("openssh", "fresh"):
        result[name]["first_vs_paramiko"] = result[name]["first_s"] / base["first_s"]
        result[name]["command_vs_paramiko"] = result[name]["command_s"] / base["command_s"]
    if args.power_off:
        session_s, ssh_s = _powered_off(watched=True), _powered_off(watched=False)
        result["powered_off"] = {
            "status_s": _status_powered_off(),
            "session_s": session_s,
            "ssh_alone_s": ssh_s,
            "ratio": session_s / ssh_s,
        }
    print(json.dumps({"commands": args.commands, "runs": args.runs, **result}, indent=2))


if __name__ == "__main__":
    main()
