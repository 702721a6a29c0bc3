"""Real sshd hosts for the provision integration tests, inside a network namespace we create.

A namespace `nrp-<random>` with a veth pair (host 10.78.<n>.1, namespace 10.78.<n>.2, /24): sshd
and rpcbind run inside it (rpcbind listens on 0.0.0.0, so never in the host's namespace), and
Ansible connects from the host to 10.78.<n>.2. Only addresses this helper created are used.
Everything is stopped by PID and the namespace deleted at teardown.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml


@dataclass(frozen=True)
class NetnsHost:
    netns: str
    host_address: str  # the host's end of the veth
    address: str  # sshd inside the namespace
    spare: str  # an address in the subnet where nothing listens (a board that is down)
    workdir: Path
    key: Path
    known_hosts: Path

    def inventory_vars(self) -> dict[str, object]:
        return {
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.key),
            "ansible_ssh_common_args": (
                f"-o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes"
                " -o ConnectTimeout=5"
            ),
            "ansible_python_interpreter": "/usr/bin/python3",
        }

    def exec(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a command inside the namespace."""
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv], capture_output=True, text=True, check=check
        )


def available() -> str:
    """Why these tests cannot run here ('' when they can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "ssh-keygen", "rpcbind"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not Path("/usr/sbin/sshd").exists():
        return "openssh-server is not installed"
    return ""


# The marks every module that starts these hosts carries.
NEEDS_HOSTS = [
    pytest.mark.integration,
    pytest.mark.skipif(bool(available()), reason=available() or "ok"),
]
# A remote export root: the hosts, and rsync on this control host.
NEEDS_RSYNC = [
    *NEEDS_HOSTS,
    pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed"),
]


def _sh(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")


def _free_names() -> tuple[int, str, str]:
    """A subnet index, namespace and veth name that nothing on this host uses yet."""
    taken = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    for _ in range(200):
        token = secrets.token_hex(3)
        n = int(token, 16) % 200 + 20
        netns, veth = f"nrp-{token}", f"nrp{token}"
        if veth in taken or netns in spaces or f"10.78.{n}." in routes:
            continue
        return n, netns, veth
    raise RuntimeError("no free 10.78.x subnet / namespace name for the test host")


def _wait_port(host: NetnsHost, port: int) -> None:
    for _ in range(100):
        probe = host.exec("bash", "-c", f"echo > /dev/tcp/{host.address}/{port}", check=False)
        if probe.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {host.address}:{port} in {host.netns}")


def _stop(pid_file: Path) -> None:
    if not pid_file.exists():
        return
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
    except (ProcessLookupError, ValueError):
        pass


@contextmanager
def netns_host(workdir: Path) -> Iterator[NetnsHost]:
    """A namespace with sshd (root, key only, host key pinned) and rpcbind running."""
    n, netns, veth = _free_names()
    host = NetnsHost(
        netns, f"10.78.{n}.1", f"10.78.{n}.2", f"10.78.{n}.9", workdir,
        workdir / "id_ed25519", workdir / "known_hosts",
    )  # fmt: skip
    pids: list[Path] = []
    _sh("ip", "netns", "add", netns)
    try:
        _sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
        _sh("ip", "addr", "add", f"{host.host_address}/24", "dev", veth)
        _sh("ip", "link", "set", veth, "up")
        host.exec("ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
        host.exec("ip", "link", "set", "eth0", "up")
        host.exec("ip", "link", "set", "lo", "up")
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(workdir / "host_key"))
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host.key))
        pub = (workdir / "host_key.pub").read_text().split()
        host.known_hosts.write_text(f"{host.address} {pub[0]} {pub[1]}\n")
        (workdir / "authorized_keys").write_text(Path(f"{host.key}.pub").read_text())
        sshd_pid = workdir / "sshd.pid"
        (workdir / "sshd_config").write_text(
            f"ListenAddress {host.address}\nHostKey {workdir / 'host_key'}\n"
            f"AuthorizedKeysFile {workdir / 'authorized_keys'}\nPidFile {sshd_pid}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nStrictModes no\n"
            "UsePAM no\nSubsystem sftp /usr/lib/openssh/sftp-server\n"
        )
        Path("/run/sshd").mkdir(exist_ok=True)
        host.exec(
            "/usr/sbin/sshd", "-f", str(workdir / "sshd_config"), "-E", str(workdir / "sshd.log")
        )
        pids.append(sshd_pid)
        rpcbind = subprocess.Popen(
            ["ip", "netns", "exec", netns, "rpcbind", "-f"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        (workdir / "rpcbind.pid").write_text(str(rpcbind.pid))
        pids.append(workdir / "rpcbind.pid")
        _wait_port(host, 22)
        yield host
    finally:
        for pid_file in (workdir / "ganesha.pid", *reversed(pids)):
            _stop(pid_file)
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)


def stop_sshd(host: NetnsHost) -> None:
    """The server is down for netroot: its sshd and every session it serves are gone (each
    process of this test's namespace that is an sshd, by pid), new connections refused."""
    pids = subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True, text=True)
    for pid in (int(p) for p in pids.stdout.split()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd":
                os.kill(pid, 9)
        except (FileNotFoundError, ProcessLookupError):
            pass
    host.exec("bash", "-c", f"while echo > /dev/tcp/{host.address}/22; do sleep 0.05; done")


def start_sshd(host: NetnsHost) -> None:
    cfg, log = host.workdir / "sshd_config", host.workdir / "sshd.log"
    host.exec("/usr/sbin/sshd", "-f", str(cfg), "-E", str(log))
    host.exec("bash", "-c", f"until echo > /dev/tcp/{host.address}/22; do sleep 0.05; done")


def write_inventory(path: Path, data: Mapping[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def make_export_tree(root: Path, image: str, version: str) -> Path:
    """The layout `netroot export` writes: versions/<id>/, versions/<id>.json, current."""
    vdir = root / image / "versions" / version
    (vdir / "etc").mkdir(parents=True)
    (vdir / "etc" / "os-release").write_text(f"ID=netroot-test\nVERSION={version}\n")
    (root / image / "versions" / f"{version}.json").write_text(f'{{"id": "{version}"}}\n')
    link = root / image / "current"
    link.unlink(missing_ok=True)
    link.symlink_to(f"versions/{version}")
    return vdir
