"""What the lab's machines are seeded with: SSH host keys, the lab's client key for `pi` (and
for root on the server), identities (hostname, machine-id, /etc/hosts); and what the control
host keeps to reach them: known_hosts and the inventory."""

from __future__ import annotations

import secrets
from pathlib import Path

from netroot import paths
from netroot.fsutil import atomic_write
from netroot.lab import render
from netroot.lab.host import disk, keys
from netroot.lab.host.boards import BoardFiles
from netroot.lab.plan import (
    BOARD_USER,
    NOSUDO_USER,
    SERVER_ADDRESS,
    SERVER_NAME,
    SERVER_USER,
    TFTP_ROOT,
    BoardPlan,
    LabPlan,
    ServerPlan,
)

SSHD_CONF = (
    b"# netroot lab: key-only root login with the lab's key; the host key comes from the lab.\n"
    b"HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
    b"PasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n"
)


def _host_key(path: Path, name: str) -> tuple[bytes, bytes, str]:
    pub = keys.ensure_key(path, f"root@{name}")
    return path.read_bytes(), (pub + "\n").encode(), pub


def _board_identity(
    board: BoardPlan, files: BoardFiles, client_pub: str
) -> dict[str, tuple[bytes, int]]:
    """What every lab board's seed holds: /etc/hosts, its SSH host key, and the lab's key for
    `pi` (passwordless sudo)."""
    priv, pub, _ = _host_key(files.host_key, board.name)
    # nfs-01 only, whatever the number of servers: boards mount by address, and a seed that
    # stays the same keeps a board's saved state resumable when the lab's servers change.
    hosts = f"127.0.0.1 localhost\n127.0.1.1 {board.name}\n{SERVER_ADDRESS} {SERVER_NAME}\n"
    return {
        "etc/hosts": (hosts.encode(), 0o644),
        "etc/ssh/ssh_host_ed25519_key": (priv, 0o600),
        "etc/ssh/ssh_host_ed25519_key.pub": (pub, 0o644),
        f"home/{BOARD_USER}/.ssh/authorized_keys": ((client_pub + "\n").encode(), 0o600),
    }


def board_seed(board: BoardPlan, files: BoardFiles, client_pub: str) -> bytes:
    identity = _board_identity(board, files, client_pub)
    machine_id = files.dir / "machine-id"
    if not machine_id.exists():  # the board's own identity, stable across restarts
        machine_id.write_text(secrets.token_hex(16) + "\n")
    # The lab's key logs in as `pi` and as `student` (sudo asks for a password: the
    # preflight's case); root's key is there too, but sshd refuses root.
    return disk.seed_tar(
        {
            **identity,
            "etc/hostname": (f"{board.name}\n".encode(), 0o644),
            "etc/machine-id": (machine_id.read_bytes(), 0o444),
            f"home/{NOSUDO_USER}/.ssh/authorized_keys": identity[
                f"home/{BOARD_USER}/.ssh/authorized_keys"
            ],
        },
        {f"home/{BOARD_USER}/.ssh": 1000, f"home/{NOSUDO_USER}/.ssh": 1001},
    )


def netboot_seeds(plan: LabPlan, srv: ServerPlan, client_pub: str) -> bytes:
    """The seeds of the diskless boards `srv` serves, as files of its TFTP root:
    seeds/01-<mac>.tar.

    A diskless board has no disk to carry its SSH host key and authorized_keys, so its initramfs
    fetches them over TFTP (images/board/netboot-init), as the lab's stand-in for what a site
    bakes into its image or provisions otherwise. TFTP has no access control: anything on the
    lab network could read a board's host key. The lab network holds only the lab's machines.
    """
    seeds: dict[str, bytes] = {}
    for board in plan.boards_of(srv):
        if not board.netboot:
            continue
        identity = _board_identity(board, BoardFiles(board.dir(plan.lab_dir)), client_pub)
        seed = disk.seed_tar(identity, {f"home/{BOARD_USER}/.ssh": 1000})
        seeds[f"01-{board.mac.replace(':', '-')}.tar"] = seed
    return disk.files_tar(f"{TFTP_ROOT.strip('/')}/seeds", seeds)


def _server_key(plan: LabPlan, srv: ServerPlan) -> tuple[bytes, bytes, str]:
    return _host_key(srv.dir(plan.lab_dir) / "ssh_host_ed25519_key", srv.name)


def server_seed(plan: LabPlan, srv: ServerPlan, client_pub: str) -> bytes:
    """A Ganesha server container's seed: its host key and the lab's key for root."""
    priv, pub, _ = _server_key(plan, srv)
    return disk.seed_tar(
        {
            "etc/ssh/ssh_host_ed25519_key": (priv, 0o600),
            "etc/ssh/ssh_host_ed25519_key.pub": (pub, 0o644),
            "etc/ssh/sshd_config.d/10-netroot-lab.conf": (SSHD_CONF, 0o644),
            "root/.ssh/authorized_keys": ((client_pub + "\n").encode(), 0o600),
        }
    )


def server_vm_seed(plan: LabPlan, srv: ServerPlan, client_pub: str) -> bytes:
    """A kernel server VM's seed (images/server-vm/customize.sh lays it over / at boot): its
    host key and name, the lab's key for its sudo user, its lab address, and where its export
    disk goes."""
    priv, pub, _ = _server_key(plan, srv)
    network = (
        f"[Match]\nMACAddress={srv.mac}\n\n[Network]\n"
        f"Address={srv.address}/{plan.prefixlen}\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n"
    )
    return disk.seed_tar(
        {
            "etc/ssh/ssh_host_ed25519_key": (priv, 0o600),
            "etc/ssh/ssh_host_ed25519_key.pub": (pub, 0o644),
            "etc/systemd/network/10-netroot-lab.network": (network.encode(), 0o644),
            "etc/netroot/export-root": (f"{srv.export_root}\n".encode(), 0o644),
            # Its name for sudo to resolve (the kernel command line sets the hostname itself).
            "etc/hosts": (f"127.0.0.1 localhost\n127.0.1.1 {srv.name}\n".encode(), 0o644),
            f"home/{SERVER_USER}/.ssh/authorized_keys": ((client_pub + "\n").encode(), 0o600),
        },
        {f"home/{SERVER_USER}/.ssh": 1000},
    )


def write_identity(plan: LabPlan, power_cycle: list[str]) -> str:
    """The lab's client key, every host's key, known_hosts and the inventory (whose diskless
    boards are power-cycled by `power_cycle` + their name); the client's public key."""
    client_pub = keys.ensure_key(plan.key, "netroot-lab")
    host_keys = {srv.name: (srv.address, _server_key(plan, srv)[2]) for srv in plan.nfs}
    for board in plan.all_boards:
        files = BoardFiles(board.dir(plan.lab_dir))
        files.dir.mkdir(parents=True, exist_ok=True)
        host_keys[board.name] = (board.address, _host_key(files.host_key, board.name)[2])
    # Atomic: other processes (Ansible, tests) may be reading these while a second `up` runs.
    atomic_write(plan.known_hosts, render.known_hosts(host_keys))
    inv = paths.lab_inventory()
    inv.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(inv, render.inventory_yaml(plan, power_cycle))
    return client_pub
