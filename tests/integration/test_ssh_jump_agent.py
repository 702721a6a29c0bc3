"""status, smoke, the sudo preflight and provision reach a host the way Ansible does: through a
jump host named only in ~/.ssh/config (ProxyJump), with the key only in an ssh-agent (no
IdentityFile, no ansible_ssh_private_key_file, no key in ~/.ssh), host keys
checked against ~/.ssh/known_hosts, and the login user named only in ~/.ssh/config.

OpenSSH reads ~/.ssh/config from the passwd entry's home, not $HOME: netroot runs in a mount
namespace of its own where /etc/passwd gives root a temporary home (the real /etc/passwd and
/root/.ssh are never touched). The hidden host is logged into as a throwaway local user with
passwordless sudo, named only in that ~/.ssh/config. The host sits in a network namespace
behind the jump host's namespace, with no route to it from here (a local `unreachable` route,
so a direct attempt fails at once).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.provision_hosts import (
    NEEDS_HOSTS,
    NetnsHost,
    make_export_tree,
    netns_host,
    write_inventory,
)

pytestmark = [
    *NEEDS_HOSTS,
    pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare is not installed"),
    pytest.mark.skipif(shutil.which("sudo") is None, reason="sudo is not installed"),
]
REPO = Path(__file__).resolve().parents[2]


def _sh(*argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=True, **kw)


@dataclass(frozen=True)
class Inner:
    address: str
    host_key: str  # "algo base64"
    workdir: Path


@contextmanager
def inner_host(jump: NetnsHost, workdir: Path) -> Iterator[Inner]:
    """sshd in a namespace reachable only from the jump host's namespace (a veth between them,
    no forwarding); users log in with the keys in their ~/.ssh/authorized_keys (this machine's
    users: the namespace shares its filesystem)."""
    token = secrets.token_hex(3)
    netns, veth, n = f"nrj-{token}", f"nrj{token}", int(token, 16) % 200 + 20
    outer, address = f"10.79.{n}.1", f"10.79.{n}.2"
    _sh("ip", "netns", "add", netns)
    sshd_pid = workdir / "sshd.pid"
    try:
        _sh("ip", "route", "add", "unreachable", f"10.79.{n}.0/24")
        jump.exec("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
        jump.exec("ip", "addr", "add", f"{outer}/24", "dev", veth)
        jump.exec("ip", "link", "set", veth, "up")
        inside = ["ip", "netns", "exec", netns]
        _sh(*inside, "ip", "addr", "add", f"{address}/24", "dev", "eth0")
        _sh(*inside, "ip", "link", "set", "eth0", "up")
        _sh(*inside, "ip", "link", "set", "lo", "up")
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(workdir / "host_key"))
        (workdir / "sshd_config").write_text(
            f"ListenAddress {address}\nHostKey {workdir / 'host_key'}\n"
            f"AuthorizedKeysFile .ssh/authorized_keys\nPidFile {sshd_pid}\n"
            "PermitRootLogin no\nPasswordAuthentication no\nUsePAM no\n"
        )
        _sh(
            *inside,
            "/usr/sbin/sshd",
            "-f",
            str(workdir / "sshd_config"),
            "-E",
            str(workdir / "sshd.log"),
        )
        jump.exec("bash", "-c", f"until echo > /dev/tcp/{address}/22; do sleep 0.05; done")
        pub = " ".join((workdir / "host_key.pub").read_text().split()[:2])
        yield Inner(address, pub, workdir)
    finally:
        if sshd_pid.exists():
            subprocess.run(["kill", sshd_pid.read_text().split()[0]], check=False)
        subprocess.run(["ip", "route", "del", f"10.79.{n}.0/24"], check=False)
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)


@dataclass(frozen=True)
class Admin:
    """The lab admin at the control host: netroot runs as root, but in a mount namespace of its
    own where root's passwd home is `home` (OpenSSH reads ~/.ssh from there, not from $HOME),
    with an ssh-agent at `agent_sock`. The hidden host is logged into as `login`, a throwaway
    local user (the namespaces share this machine's users) with passwordless sudo."""

    home: Path
    agent_sock: Path
    login: str
    login_home: Path

    def run(self, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        env = {
            "HOME": str(self.home),
            "PATH": os.environ["PATH"],
            "SSH_AUTH_SOCK": str(self.agent_sock),
            "PYTHONPATH": str(REPO),
            "NETROOT_HOME": str(self.home / "state"),
            "NETROOT_CACHE": str(self.home / "cache"),
            "XDG_RUNTIME_DIR": str(self.home / "run"),  # this test's ssh masters, nobody else's
        }
        script = 'mount --bind "$0" /etc/passwd && exec env -i "$@"'
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script,
             str(self.home / "passwd"), *(f"{k}={v}" for k, v in env.items()), *argv],
            capture_output=True, text=True, timeout=timeout, cwd=self.home, check=False,
        )  # fmt: skip


@contextmanager
def admin(key: Path) -> Iterator[Admin]:
    """The admin's home and agent (holding `key`, whose file stays elsewhere), and the login
    user of the hidden host."""
    login = f"nrj{secrets.token_hex(3)}"
    home = Path(tempfile.mkdtemp(prefix="nrj-"))  # short: ssh's control sockets live below
    login_home = Path(tempfile.mkdtemp(prefix="nrj-"))
    sudoers = Path("/etc/sudoers.d") / login
    agent_pid = None
    _sh("useradd", "-M", "-d", str(login_home), "-s", "/bin/sh", "-p", "*", login)
    try:
        shutil.chown(login_home, login, login)
        sudoers.write_text(f"{login} ALL=(ALL) NOPASSWD: ALL\n")
        sudoers.chmod(0o440)
        (home / "run").mkdir(mode=0o700)
        passwd = [
            re.sub(r"^(root:[^:]*:0:0:[^:]*:)[^:]*:", rf"\g<1>{home}:", line)
            for line in Path("/etc/passwd").read_text().splitlines()
        ]
        (home / "passwd").write_text("\n".join(passwd) + "\n")
        agent_sock = home / "agent.sock"
        started = _sh("ssh-agent", "-a", str(agent_sock), "-s")
        agent_pid = int(started.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
        env = {**os.environ, "SSH_AUTH_SOCK": str(agent_sock)}
        _sh("ssh-add", str(key), env=env)
        yield Admin(home, agent_sock, login, login_home)
    finally:
        if agent_pid is not None:
            subprocess.run(["kill", str(agent_pid)], check=False)
        # Ansible's own ssh masters (ControlPersist, ~/.ansible/cp under this home) and the
        # login user's processes on the hidden host, all started by this test: ended by pid.
        for pattern in (["-f", f"ssh: {home}/"], ["-u", login]):
            left = subprocess.run(["pgrep", *pattern], capture_output=True, text=True)
            for pid in left.stdout.split():
                subprocess.run(["kill", pid], check=False)
        sudoers.unlink(missing_ok=True)
        for _ in range(50):  # userdel refuses while the user's processes are still exiting
            if subprocess.run(["userdel", login], capture_output=True).returncode in (0, 6):
                break
            time.sleep(0.1)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(login_home, ignore_errors=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Admin, Inner]]:
    tmp = tmp_path_factory.mktemp("jump")
    key = tmp / "agent_key"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    pub = (tmp / "agent_key.pub").read_text()
    with ExitStack() as stack:
        (tmp / "jump").mkdir()
        jump = stack.enter_context(netns_host(tmp / "jump"))
        with (jump.workdir / "authorized_keys").open("a") as keys:
            keys.write(pub)
        (tmp / "inner").mkdir()
        inner = stack.enter_context(inner_host(jump, tmp / "inner"))
        lab = stack.enter_context(admin(key))
        login_ssh = lab.login_home / ".ssh"
        login_ssh.mkdir(mode=0o700)
        (login_ssh / "authorized_keys").write_text(pub)
        _sh("chown", "-R", f"{lab.login}:{lab.login}", str(login_ssh))
        ssh_dir = lab.home / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        jump_key = " ".join((jump.workdir / "host_key.pub").read_text().split()[:2])
        (ssh_dir / "known_hosts").write_text(
            f"{jump.address} {jump_key}\n{inner.address} {inner.host_key}\n"
        )
        # All the admin's SSH setup is here, as one writes it: the jump host by alias, the
        # login user of the hidden host, and no IdentityFile (the agent has the key).
        (ssh_dir / "config").write_text(
            f"Host nrj-jump\n    HostName {jump.address}\n    User root\n\n"
            f"Host {inner.address}\n    ProxyJump nrj-jump\n    User {lab.login}\n\n"
            "Host *\n    StrictHostKeyChecking yes\n"
        )
        yield lab, inner


def _inventory(lab: Admin, inner: Inner) -> Path:
    root = lab.home / "export"
    if not root.exists():
        make_export_tree(root, "img", "d4" * 6)
    bin_dir = lab.home / "bin"
    bin_dir.mkdir(exist_ok=True)
    # No ansible_user, no key, no known_hosts, no ssh args: ~/.ssh/config and the agent say it.
    data = {
        "all": {
            "vars": {"ansible_become": True, "ansible_python_interpreter": "/usr/bin/python3"},
            "children": {
                "nfs_servers": {
                    "hosts": {
                        "nfs-j": {
                            "ansible_host": inner.address,
                            "netroot_export_root": str(root),
                            "netroot_nfs_backend": "kernel",
                            "netroot_nfs_server_exports_file": str(lab.home / "exports"),
                            "netroot_nfs_server_manage_service": False,
                            "netroot_nfs_server_bin_dir": str(bin_dir),
                            "netroot_nfs_server_install_packages": False,
                            "netroot_nfs_server_state_file": str(lab.home / "nfs.state"),
                        }
                    }
                },
                "boards": {
                    "hosts": {
                        "pi-j": {
                            "ansible_host": inner.address,
                            "netroot_address": inner.address,
                            "netroot_image": "img",
                        }
                    }
                },
            },
        }
    }
    return write_inventory(lab.home / "inventory.yml", data)


def test_the_host_is_reachable_only_through_the_jump_host(world: tuple[Admin, Inner]) -> None:
    lab, inner = world
    direct = lab.run("ssh", "-o", "ProxyJump=none", inner.address, "true", timeout=60)
    assert direct.returncode == 255 and "No route to host" in direct.stderr, direct.stderr
    through = lab.run("ssh", inner.address, "id -un", timeout=60)
    assert through.returncode == 0 and through.stdout.strip() == lab.login, through.stderr
    assert (
        not Path("/root/.ssh/config").exists()
        or "nrj-jump" not in Path("/root/.ssh/config").read_text()
    )


def test_status_smoke_preflight_and_provision_go_through_the_jump_host_with_the_agent_key(
    world: tuple[Admin, Inner],
) -> None:
    lab, inner = world
    inventory = _inventory(lab, inner)
    done = lab.run(
        sys.executable, "-m", "tests.integration.ssh_as_user", str(inventory), "nfs-j", "pi-j"
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    session = outcome["session"]
    assert session.get("user") == lab.login, outcome  # from ~/.ssh/config, as Ansible takes it
    assert (session["login"], session["root"]) == (lab.login, "root"), session
    assert session["piped_ok"], session
    assert session["own_255"] == [255, "out\n", "err\n"], session  # the command's, not ssh's
    assert outcome["status"] == {"facts": True, "why": ""}, outcome
    assert outcome["smoke"] == "root", outcome
    assert outcome["preflight"] == "ok", outcome
    assert outcome["provision"].get("exit") == 0, outcome["provision"]
    assert (lab.home / "exports").exists()  # written on the hidden host, as root
    # Every master netroot started was told to exit when its session closed.
    left = subprocess.run(["pgrep", "-af", f"{lab.home}/run/"], capture_output=True, text=True)
    assert left.stdout == "", left.stdout


def test_a_login_that_cannot_sudo_without_a_password_is_stopped_by_the_preflight(
    world: tuple[Admin, Inner],
) -> None:
    lab, inner = world
    sudoers = Path("/etc/sudoers.d") / lab.login
    saved = sudoers.read_text()
    sudoers.write_text(f"{lab.login} ALL=(ALL) ALL\n")  # a password now
    try:
        inventory = _inventory(lab, inner)
        code = (
            "import sys; from pathlib import Path; from netroot.inventory import load;"
            "from netroot.sshtarget import target_for;"
            "from netroot.adapters.become import check_privileges, BecomeRefused\n"
            "try:\n"
            f"    check_privileges([target_for(load(Path({str(inventory)!r})).hosts['nfs-j'])])\n"
            "except BecomeRefused as e:\n    print(e.message); sys.exit(2)\n"
        )
        done = lab.run(sys.executable, "-c", code, timeout=120)
    finally:
        sudoers.write_text(saved)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{lab.login}@{inner.address}" in done.stdout, done.stdout
    assert "cannot sudo without a password" in done.stdout, done.stdout
