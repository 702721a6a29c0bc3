"""Local test images (no registry) and the reference extraction the export is compared with."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from netroot.paths import project_file
from netroot.run import run
from tests.integration.export import rootfs_gen

RECIPES = project_file("images", "test-export")
FIDELITY = "netroot-test/export-fidelity:1"
LAYERED = "netroot-test/export-layered:1"
# GNU tar restores only user.* xattrs unless told otherwise: security.capability needs '*'.
REFERENCE_TAR = "tar -xp --numeric-owner --xattrs --xattrs-include='*'"


def docker_client() -> Any:
    """An SDK client, or None when the engine does not answer (tests skip then)."""
    import docker

    try:
        c = docker.from_env(timeout=300)
        c.ping()
    except docker.errors.DockerException:
        return None
    return c


def build(tag: str, context: Path, dockerfile: str = "Dockerfile", **args: str) -> None:
    """`docker build --pull=false --network none`: never a registry."""
    cmd = [
        "docker",
        "build",
        "-q",
        "--pull=false",
        "--network",
        "none",
        "-t",
        tag,
        "-f",
        str(context / dockerfile),
    ]
    for key, value in args.items():
        cmd += ["--build-arg", f"{key}={value}"]
    run([*cmd, str(context)], timeout=900)


def build_fidelity(workdir: Path) -> None:
    ctx = workdir / "fidelity"
    ctx.mkdir(parents=True, exist_ok=True)
    rootfs_gen.write_fidelity_rootfs(ctx / "rootfs.tar")
    shutil.copy(RECIPES / "Dockerfile", ctx / "Dockerfile")
    build(FIDELITY, ctx)
    shutil.copy(RECIPES / "Dockerfile.layers", ctx / "Dockerfile.layers")
    build(LAYERED, ctx, "Dockerfile.layers", BASE=FIDELITY)


def build_bulk(workdir: Path, tag: str, total_bytes: int, top: bytes) -> None:
    """Two big random layers plus a small top layer holding `top` (the part that changes)."""
    import io
    import tarfile

    ctx = workdir / "bulk"
    ctx.mkdir(parents=True, exist_ok=True)
    for seed in (0, 1):
        target = ctx / f"bulk{seed}.tar"
        if not target.exists():
            rootfs_gen.write_bulk_rootfs(target, total_bytes // 2, 4000, seed)
    with tarfile.open(ctx / "top.tar", "w", format=tarfile.PAX_FORMAT) as tar:
        ti = tarfile.TarInfo("app/version")
        ti.size, ti.mtime, ti.mode = len(top), 1_700_000_000, 0o644
        tar.addfile(ti, io.BytesIO(top))
    shutil.copy(RECIPES / "Dockerfile.bulk", ctx / "Dockerfile")
    build(tag, ctx)


def reference_extract(client: Any, image: str, dest: Path) -> None:
    """`docker export` of a created container into GNU tar: the baseline for fidelity."""
    dest.mkdir(parents=True)
    c = client.containers.create(image, command=["/never-run"], network_disabled=True)
    try:
        run(["sh", "-c", f"docker export {c.id} | {REFERENCE_TAR} -C {dest}"], timeout=900)
    finally:
        c.remove(force=True)


Walk = dict[str, tuple[Any, ...]]


def walk(root: Path) -> Walk:
    """Independent of netroot's scanner: lstat, xattrs, content hash, hard-link groups."""
    out: Walk = {}
    inodes: dict[int, list[str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                with open(full, "rb") as f:
                    content = hashlib.sha256(f.read()).hexdigest()
                if st.st_nlink > 1:
                    inodes.setdefault(st.st_ino, []).append(rel)
            elif stat.S_ISLNK(st.st_mode):
                content = os.readlink(full)
            else:
                content = ""
            xattrs = tuple(
                sorted(
                    (n, os.getxattr(full, n, follow_symlinks=False))
                    for n in os.listxattr(full, follow_symlinks=False)
                )
            )
            rdev = st.st_rdev if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else 0
            out[rel] = (
                st.st_mode,
                st.st_uid,
                st.st_gid,
                st.st_size if not stat.S_ISDIR(st.st_mode) else 0,
                st.st_mtime_ns,
                rdev,
                content,
                xattrs,
            )
    for names in inodes.values():
        if len(names) > 1:
            for n in names:
                out[n] = (*out[n], ("group", min(names)))
    return out


def differences(ours: Walk, reference: Walk, skip: set[str]) -> list[str]:
    diffs = []
    for path in sorted(set(ours) | set(reference)):
        if path in skip:
            continue
        if ours.get(path) != reference.get(path):
            diffs.append(f"{path}: ours={ours.get(path)} reference={reference.get(path)}")
    return diffs
