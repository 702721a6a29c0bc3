"""An NFS-Ganesha server host (nfs-01, nfs-02, ...): a privileged container on the lab bridge
(no Docker network)."""

from __future__ import annotations

import json
from pathlib import Path

from netroot.errors import EnvironmentMissing, NetrootError
from netroot.lab.host import network
from netroot.lab.plan import SERVER_CONTAINER, SERVER_IMAGE, LabPlan, ServerPlan
from netroot.run import run

DOCKER_HINT = "is dockerd running? (`bash .ci/setup` starts it)"
LABEL = "netroot.lab=server"


def inspect(container: str = SERVER_CONTAINER) -> dict[str, object] | None:
    """`docker inspect` of a server container, or None if there is none."""
    proc = run(["docker", "container", "inspect", container], check=False)
    if proc.returncode != 0:
        return None
    data = json.loads(proc.stdout)
    return data[0] if data else None


def running_pid(container: str = SERVER_CONTAINER) -> int | None:
    """The container's init PID if it is running."""
    info = inspect(container)
    if not info:
        return None
    state = info.get("State")
    if isinstance(state, dict) and state.get("Running"):
        pid = state.get("Pid")
        return int(pid) if isinstance(pid, int) and pid > 0 else None
    return None


# Linux capability numbers -> Docker's names (capability.h order).
CAPS = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
]


def missing_caps(cap_bnd_hex: str) -> list[str]:
    """Capabilities absent from a bounding set (`CapBnd:` of /proc/self/status), by name."""
    bits = int(cap_bnd_hex, 16)
    return [name for i, name in enumerate(CAPS) if not bits >> i & 1]


def privilege_args() -> list[str]:
    """As privileged as this host allows.

    `--privileged` asks runc for every capability; where our own bounding set lacks one (seen
    here: CAP_SYS_RESOURCE) runc fails with "unable to apply caps". Then: all capabilities we
    have, no seccomp/AppArmor filter, and /sys and /proc unmasked, which is what ganesha and
    overlay mounts need of --privileged.
    """
    status = Path("/proc/self/status").read_text()
    bnd = next(line.split()[1] for line in status.splitlines() if line.startswith("CapBnd:"))
    absent = missing_caps(bnd)
    if not absent:
        return ["--privileged"]
    args = ["--cap-add", "ALL"]
    for cap in absent:
        args += ["--cap-drop", cap]
    return [
        *args,
        "--security-opt",
        "seccomp=unconfined",
        "--security-opt",
        "apparmor=unconfined",
        "--security-opt",
        "systempaths=unconfined",
        "--device-cgroup-rule",
        "a *:* rwm",
    ]


def start(plan: LabPlan, srv: ServerPlan, seed: bytes) -> int:
    """Create and start server `srv` and put it on the lab bridge; returns the container's PID.

    Privileged because ganesha's FSAL VFS needs open_by_handle_at (CAP_DAC_READ_SEARCH) and the
    per-board layers need `mount -t overlay -o index=on,nfs_export=on`. `--network none`:
    its only link is the veth the lab moves in, so it sees the boards' own addresses.
    """
    if run(["docker", "image", "inspect", SERVER_IMAGE], check=False).returncode != 0:
        raise EnvironmentMissing(f"image {SERVER_IMAGE} is not built", "run `netroot lab up`")
    remove(srv.container)
    root = str(srv.export_root)
    run(
        [
            "docker",
            "create",
            "--pull",
            "never",
            "--name",
            srv.container,
            "--hostname",
            srv.name,
            *privilege_args(),
            "--init",
            "--network",
            "none",
            "--label",
            LABEL,
            "-v",
            f"{root}:{root}",
            "--tmpfs",
            "/run:exec,mode=755",
            SERVER_IMAGE,
        ],
        hint=DOCKER_HINT,
    )
    # The seed (host key, authorized_keys, sshd settings) goes in before sshd first starts.
    run(["docker", "cp", "-", f"{srv.container}:/"], input=seed, hint=DOCKER_HINT)
    run(["docker", "start", srv.container], hint=DOCKER_HINT)
    pid = running_pid(srv.container)
    if pid is None:
        logs = run(["docker", "logs", srv.container], check=False).stderr.decode()
        raise NetrootError(f"{srv.container} did not stay up: {logs.strip()[-300:]}")
    network.attach_container(pid, srv.veth, srv.address, plan.prefixlen)
    return pid


def copy_in(tar: bytes, container: str = SERVER_CONTAINER) -> None:
    """Unpack `tar` over a running server's root (files the lab hands it, like seeds)."""
    run(["docker", "cp", "-", f"{container}:/"], input=tar, hint=DOCKER_HINT)


def containers() -> list[str]:
    """Every lab server container there is, running or not (by the lab's label)."""
    proc = run(["docker", "ps", "-a", "--filter", f"label={LABEL}", "--format", "{{.Names}}"],
               check=False)  # fmt: skip
    return sorted(proc.stdout.decode().split()) if proc.returncode == 0 else []


def remove(container: str = SERVER_CONTAINER) -> bool:
    """Remove a server container if it exists (its processes go with it)."""
    if inspect(container) is None:
        return False
    run(["docker", "rm", "-f", "-v", container], hint=DOCKER_HINT)
    return True
