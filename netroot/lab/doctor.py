"""What the lab needs from the system, and the apt command that installs what is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Requirement:
    """A tool (or file) and the Debian package that provides it."""

    what: str  # a command name, or an absolute path
    package: str
    why: str


REQUIREMENTS = (
    Requirement("ip", "iproute2", "lab network namespace, bridge, veths, taps"),
    Requirement("nsenter", "util-linux", "address the server container's network"),
    Requirement("qemu-system-arm", "qemu-system-arm", "the virtual 32-bit ARM boards"),
    Requirement("qemu-system-aarch64", "qemu-system-arm", "the virtual 64-bit ARM boards"),
    Requirement("qemu-system-x86_64", "qemu-system-x86", "the kernel NFS server VM"),
    Requirement("rsync", "rsync", "the kernel server VM's copy of the export root"),
    Requirement("qemu-img", "qemu-utils", "per-board copy-on-write disks"),
    Requirement("mmdebstrap", "mmdebstrap", "building the lab's Debian trees"),
    Requirement("/usr/bin/qemu-arm-static", "qemu-user-static", "armhf tree builds on x86"),
    Requirement("update-binfmts", "binfmt-support", "registering qemu-arm for armhf"),
    Requirement("docker", "docker.io", "the server container and the Raspbian image"),
    Requirement("ssh", "openssh-client", "reaching boards and server"),
    Requirement("ssh-keygen", "openssh-client", "the lab's keys and host keys"),
    Requirement("mke2fs", "e2fsprogs", "the boards' base disk (mke2fs -d)"),
    Requirement("depmod", "kmod", "the boards' kernel modules"),
    Requirement("modprobe", "kmod", "resolving the initramfs modules"),
    Requirement("tar", "tar", "unpacking trees"),
)


def missing(found: Callable[[str], bool]) -> list[Requirement]:
    """The requirements `found` says are absent (pure: `found` is the probe)."""
    return [r for r in REQUIREMENTS if not found(r.what)]


def apt_command(reqs: list[Requirement]) -> str:
    """One `apt-get install` line for the packages behind `reqs` (deduplicated, in order)."""
    packages = list(dict.fromkeys(r.package for r in reqs))
    return "apt-get install --no-install-recommends " + " ".join(packages)


def tool_present(what: str) -> bool:
    """Probe: an absolute path exists, or a command is on PATH (sbin included: we run as root)."""
    if what.startswith("/"):
        return Path(what).exists()
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return shutil.which(what, path=path) is not None


@dataclass(frozen=True)
class Check:
    """One non-package condition (root, /dev/net/tun, binfmt, dockerd)."""

    name: str
    ok: bool
    hint: str


def system_checks(docker_ok: bool) -> list[Check]:
    """Conditions beyond packages; `docker_ok` is whether `docker info` answered."""
    binfmt = Path("/proc/sys/fs/binfmt_misc/qemu-arm")
    return [
        Check(
            "running as root", os.geteuid() == 0, "the lab creates namespaces and taps: use root"
        ),
        Check("/dev/net/tun", Path("/dev/net/tun").exists(), "load the tun module (modprobe tun)"),
        Check(
            "qemu-arm binfmt",
            binfmt.exists(),
            "mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; "
            "update-binfmts --enable qemu-arm",
        ),
        Check("dockerd answers", docker_ok, "start it: bash .ci/setup (or dockerd &)"),
    ]
