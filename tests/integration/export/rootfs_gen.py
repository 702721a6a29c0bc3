"""Generate root-filesystem tars for the export tests and benchmark (no registry, no mknod).

The tars are written with tarfile, so device nodes, setuid bits, owners and xattrs need no
privileges here; `docker build` (FROM scratch, ADD rootfs.tar /) materialises them.
"""

from __future__ import annotations

import io
import random
import struct
import tarfile
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
MTIME = 1_700_000_000

# vfs_cap_data revision 2: cap_net_raw (13) permitted + effective, as `setcap cap_net_raw+ep`.
CAP_NET_RAW = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)


def _info(
    name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, **kw: object
) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.mtime = int(kw.pop("mtime", MTIME))  # type: ignore[call-overload]
    for key, value in kw.items():
        setattr(ti, key, value)
    return ti


def _file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644, **kw: object) -> None:
    ti = _info(name, tarfile.REGTYPE, mode, **kw)
    ti.size = len(data)
    tar.addfile(ti, io.BytesIO(data))


def _dir(tar: tarfile.TarFile, name: str, mode: int = 0o755, **kw: object) -> None:
    tar.addfile(_info(name, tarfile.DIRTYPE, mode, **kw))


def write_fidelity_rootfs(path: Path) -> None:
    """A small rootfs exercising every kind of tar member the export must reproduce exactly."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("bin", "dev", "etc", "etc/ssh", "usr", "usr/bin", "var", "var/lib", "opt"):
            _dir(tar, d)
        _dir(tar, "tmp", 0o1777)
        _dir(tar, "root", 0o700)
        _dir(tar, "srv", 0o2775, gid=42)
        _dir(tar, "var/lib/gone")
        _dir(tar, "opt/replaced")
        _file(tar, "bin/busybox", BUSYBOX.read_bytes(), 0o755)
        for applet in ("sh", "ls", "cat", "rm", "mkdir", "echo", "touch"):
            tar.addfile(_info(f"bin/{applet}", tarfile.SYMTYPE, 0o777, linkname="busybox"))
        tar.addfile(_info("usr/bin/env", tarfile.SYMTYPE, 0o777, linkname="/bin/busybox"))
        tar.addfile(_info("usr/bin/dangling", tarfile.SYMTYPE, 0o777, linkname="/nowhere/at/all"))
        _file(tar, "usr/bin/suid", b"#!/bin/sh\necho suid\n", 0o4755)
        _file(tar, "usr/bin/sgid", b"#!/bin/sh\necho sgid\n", 0o2711, gid=42)
        _file(tar, "usr/bin/both", b"both\n", 0o6755, uid=0, gid=5)
        ping = _info("bin/ping", tarfile.REGTYPE, 0o755)
        ping.pax_headers = {"SCHILY.xattr.security.capability": CAP_NET_RAW.decode("latin-1")}
        data = b"\x7fELF fake ping\n"
        ping.size = len(data)
        tar.addfile(ping, io.BytesIO(data))
        uattr = _info("etc/tagged.conf", tarfile.REGTYPE, 0o640, uid=1000, gid=1000)
        uattr.pax_headers = {"SCHILY.xattr.user.netroot": "hello"}
        uattr.size = 3
        tar.addfile(uattr, io.BytesIO(b"x=1"))
        _file(tar, "usr/bin/linked", b"one inode, three names\n", 0o755)
        for alias in ("usr/bin/linked2", "bin/linked3"):
            tar.addfile(_info(alias, tarfile.LNKTYPE, 0o755, linkname="usr/bin/linked"))
        _file(tar, "root/secret", b"root only\n", 0o600)
        _file(tar, "home-owned", b"", 0o640, uid=1234, gid=4321, mtime=86400)
        tar.addfile(_info("dev/null", tarfile.CHRTYPE, 0o666, devmajor=1, devminor=3))
        tar.addfile(_info("dev/loop9", tarfile.BLKTYPE, 0o660, devmajor=7, devminor=9, gid=6))
        tar.addfile(_info("dev/initctl", tarfile.FIFOTYPE, 0o600))
        _file(tar, "etc/machine-id", b"")
        _file(tar, "etc/hostname", b"")
        _file(tar, "etc/resolv.conf", b"")
        _file(tar, "etc/ssh/ssh_host_ed25519_key", b"-----PRIVATE-----\n", 0o600)
        _file(tar, "etc/ssh/ssh_host_ed25519_key.pub", b"ssh-ed25519 AAAA test\n")
        _file(tar, "etc/ssh/sshd_config", b"PermitRootLogin yes\n")
        _file(tar, "var/lib/gone/file", b"removed by a later layer\n")
        _file(tar, "opt/replaced/old", b"hidden by an opaque dir\n")
        _file(tar, "opt/keep", b"kept\n")
        long_dir = "opt/" + "d" * 90 + "/" + "e" * 90
        _dir(tar, "opt/" + "d" * 90)
        _dir(tar, long_dir)
        _file(tar, long_dir + "/" + "f" * 120, b"long name\n")
        tar.addfile(_info("opt/longlink", tarfile.SYMTYPE, 0o777, linkname="/" + long_dir))
        _file(tar, "opt/spaces and ünïcode", b"name\n", mtime=1)
        rng = random.Random(7)
        _file(tar, "opt/random.bin", rng.randbytes(3 * 1024 * 1024 + 17))
        _file(tar, "opt/sparse-ish", b"\0" * 200_000)


def write_bulk_rootfs(path: Path, total_bytes: int, files: int, seed: int) -> None:
    """A rootfs of `files` random files totalling about `total_bytes` (benchmark base layers)."""
    rng = random.Random(seed)
    per_dir = 200
    sizes = [max(0, int(rng.expovariate(files / total_bytes))) for _ in range(files)]
    scale = total_bytes / max(1, sum(sizes))
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        if seed == 0:
            _dir(tar, "bin")
            _file(tar, "bin/busybox", BUSYBOX.read_bytes(), 0o755)
            tar.addfile(_info("bin/sh", tarfile.SYMTYPE, 0o777, linkname="busybox"))
        top = f"data{seed}"
        _dir(tar, top)
        for i, size in enumerate(sizes):
            if i % per_dir == 0:
                _dir(tar, f"{top}/d{i // per_dir:04d}")
            _file(tar, f"{top}/d{i // per_dir:04d}/f{i:06d}", rng.randbytes(int(size * scale)))
