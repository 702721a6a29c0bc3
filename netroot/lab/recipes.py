"""The lab's image recipes as data: what mmdebstrap builds, and the cache key of each (pure)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"

# Keep the trees small: no docs (but copyrights), no man pages, no translations.
SLIM_DPKG_OPTS = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/locale/*",
)


@dataclass(frozen=True)
class Recipe:
    """One mmdebstrap run: a Debian tree as a tar, named by what went into it."""

    name: str
    arch: str
    variant: str
    packages: tuple[str, ...]
    dpkg_opts: tuple[str, ...] = SLIM_DPKG_OPTS
    suite: str = SUITE
    mirror: str = MIRROR
    apt_opts: tuple[str, ...] = ()  # apt's options (`--aptopt`), such as no Recommends
    hooks: tuple[str, ...] = ()  # mmdebstrap hook options (`--essential-hook=...`)
    # A foreign tree's Python bytecode compiled by the host's interpreter, not by py3compile
    # under qemu-user (netroot/lab/host/bytecode.py: the same .pyc files, natively).
    host_bytecode: bool = False

    @property
    def key(self) -> str:
        """Changes whenever anything that shapes the tree changes."""
        shape = asdict(self)
        # Recipes from before these fields keep their keys (caches).
        for late in ("apt_opts", "hooks", "host_bytecode"):
            if not shape[late]:
                del shape[late]
        blob = json.dumps(shape, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.arch}-{self.key}.tar"

    def argv(self, output: str, build_options: tuple[str, ...] = ()) -> list[str]:
        """The mmdebstrap command line that writes this tree to `output`.

        build_options: options that change how fast the tree is built, never what is in it
        (so they are not part of the key).
        """
        # --format: never guessed from the file name (a temporary name would make a directory).
        argv = ["mmdebstrap", "--quiet", "--format=tar", f"--arch={self.arch}"]
        argv.append(f"--variant={self.variant}")
        argv += [f"--dpkgopt={opt}" for opt in self.dpkg_opts]
        argv += [f"--aptopt={opt}" for opt in self.apt_opts]
        argv += list(self.hooks)
        if self.packages:
            argv.append("--include=" + ",".join(self.packages))
        argv += [*build_options, self.suite, output, self.mirror]
        return argv


def kernel(arch: str, package: str) -> Recipe:
    """A board kind's kernel (netroot/lab/arch.py): Debian's kernel `package` and a static busybox
    for the initramfs, with the `extract` variant: it only unpacks, no maintainer scripts run, and
    the host's dpkg architectures stay untouched (unlike `dpkg --add-architecture`)."""
    return Recipe("kernel", arch, "extract", (package, "busybox-static"), ())


# The boards' own "SD-card" OS: armhf like Raspberry Pi OS Lite, booting systemd, with sudo for
# its imaging user `pi` (images/board/customize.sh). dbus keeps systemd's tools quiet.
BOARD = Recipe(
    "board-rootfs",
    "armhf",
    "minbase",
    (
        "systemd-sysv",
        "udev",
        "dbus",
        "openssh-server",
        "python3",
        "nfs-common",
        "kmod",
        "iproute2",
        "procps",
        "netbase",
        "sudo",
    ),
    host_bytecode=True,
)

# The NFS server host: userspace NFS (the kernel here has no nfsd), reachable over SSH, and
# dnsmasq for the diskless boards.
SERVER = Recipe(
    "server-rootfs",
    "amd64",
    "minbase",
    (
        "openssh-server",
        "python3",
        "nfs-ganesha",
        "nfs-ganesha-vfs",
        "rpcbind",
        "libnfs-utils",
        "iproute2",
        "procps",
        "kmod",
        # dnsmasq's binary only (no system service): DHCP + TFTP for diskless boards.
        "dnsmasq-base",
        # /etc/services: without it rpcbind finds no "sunrpc" port and listens on its unix
        # socket only, so an NFSv3 client (a diskless board's root) cannot find mountd.
        "netbase",
        # A remote export root: the control host rsyncs versions in (netroot.export.serverroot).
        "rsync",
    ),
)

# The NFS server as a machine of its own (`lab up --server kernel`): Debian bookworm amd64 under
# QEMU with Linux's own NFS server, booting systemd from its own disk. The kernel's postinst
# builds Debian's own initramfs (initramfs-tools, MODULES=most: virtio, ext4) in the tree; nfsd
# is a module that nfs-kernel-server's units load. Native (amd64 on amd64): no qemu-user.
SERVER_VM = Recipe(
    "server-vm-rootfs",
    "amd64",
    "minbase",
    (
        "linux-image-cloud-amd64",
        "initramfs-tools",
        "systemd-sysv",
        "udev",
        "dbus",
        "nfs-kernel-server",
        "openssh-server",
        "sudo",
        "python3",
        "rsync",
        "iproute2",
        "procps",
        "kmod",
        "netbase",
    ),
)

# The 64-bit boards' own OS (`lab up --arch arm64`): the same packages, arm64, like 64-bit
# Raspberry Pi OS Lite on a 3B.
BOARD_ARM64 = Recipe(
    "board-rootfs", "arm64", BOARD.variant, BOARD.packages, host_bytecode=BOARD.host_bytecode
)

# The Raspbian stand-in that netroot exports: armhf python3 and numpy (no torch in Debian armhf).
RASPBIAN = Recipe(
    "raspbian-rootfs", "armhf", "minbase", ("python3", "python3-numpy"), host_bytecode=True
)

# The 64-bit stand-in with PyTorch: Debian's python3-torch (bookworm: 1.13.1) is built for arm64
# (ARMv8.0, so it runs on a 3B's Cortex-A53), not armhf. Lean: what `import torch` and netroot's
# operators need. No Recommends (libtorch-dev, build-essential, ninja, pybind11: a compiler
# toolchain for torch's C++ extensions); and of what it Depends on, no test files: libtorch-test's
# C++ test binaries, and every Python package's tests/ (sympy's alone are tens of MB). Those .py
# files would also be byte-compiled under qemu-user by their packages' postinst (py3compile, one
# emulated core): py3compile's own exclusion list (/usr/share/python3/bcep, written before any
# Python package is configured) keeps it from compiling files dpkg never unpacked. torch.testing
# stays: `import torch` imports it.
NO_TESTS_BCEP = "re|3.0-|/usr/lib/python3/dist-packages/|.*/tests/.*"
RASPBIAN_TORCH = Recipe(
    "raspbian-torch-rootfs",
    "arm64",
    "minbase",
    ("python3", "python3-numpy", "python3-torch"),
    dpkg_opts=(
        *SLIM_DPKG_OPTS,
        "path-exclude=/usr/lib/libtorch-test/*",
        "path-exclude=/usr/lib/python3/dist-packages/*/tests/*",
        "path-exclude=/usr/include/*",
        # What torch's shared libraries pull in but `import torch` never maps (/proc/self/maps
        # after `import torch, numpy` in the image, under qemu-user): Mesa's GL drivers and the
        # LLVM they load (libtorch links OpenCV, Qt5 and libGL, which open a driver only for a
        # GL context), and data files.
        "path-exclude=/usr/lib/*/dri/*",
        "path-exclude=/usr/lib/*/libLLVM-15.so*",
        "path-exclude=/usr/lib/*/libz3.so*",
        "path-exclude=/usr/share/proj/*",
        "path-exclude=/usr/share/iso-codes/*",
        "path-exclude=/usr/share/xml/iso-codes/*",
    ),
    apt_opts=('APT::Install-Recommends "false"',),
    hooks=(
        '--essential-hook=mkdir -p "$1/usr/share/python3/bcep" && '
        f"echo '{NO_TESTS_BCEP}' > \"$1/usr/share/python3/bcep/netroot-no-tests\"",
    ),
    host_bytecode=True,
)

# A light board (`lab up --board-kind light`, for scale only): a privileged container of the
# host's own arch booting systemd, the same stock `pi` login and /boot/firmware as the emulated
# boards. No kernel NFS client exists on this host (a Firecracker guest's kernel without one), so
# its NFS client is userspace: nfs-rs (PyPI, installed from its wheel by the image build) under
# FUSE (python3-pyfuse3, fuse3) as /sbin/mount.nfs (images/light-board/mount.nfs).
LIGHT_BOARD = Recipe(
    "light-board-rootfs",
    "amd64",
    "minbase",
    (
        "systemd-sysv",
        "dbus",
        "openssh-server",
        "python3",
        "python3-pyfuse3",
        "fuse3",
        "kmod",
        "iproute2",
        "procps",
        "netbase",
        "sudo",
    ),
)

# What a light board's version runs: an amd64 stand-in for the Raspbian one (python3 and numpy),
# native on the host like the light board itself.
LIGHT_VERSION = Recipe("light-version-rootfs", "amd64", "minbase", ("python3", "python3-numpy"))

ALL = (BOARD, BOARD_ARM64, SERVER, SERVER_VM, RASPBIAN, RASPBIAN_TORCH, LIGHT_BOARD, LIGHT_VERSION)
