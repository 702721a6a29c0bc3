"""What the virtual lab is built from, built once and cached (`netroot lab up`, `lab build`).

Moved out of lab/host/service.py (which starts, checks and stops the lab) unchanged but for the
Raspbian images, built from one table (`_board_images`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from netroot import paths
from netroot.errors import EnvironmentMissing
from netroot.lab import arch as arch_mod
from netroot.lab import doctor, recipes
from netroot.lab.arch import BoardArch
from netroot.lab.host import builds, disk, images, kernel, netboot_image, serverhost, servervm
from netroot.lab.plan import DEFAULT_SERVER, RASPBIAN_IMAGE, RASPBIAN_TORCH_IMAGE
from netroot.lab.recipes import Recipe
from netroot.run import run

Report = Callable[[str], None]


def _board_images(arches: Sequence[BoardArch]) -> list[tuple[str, str, Recipe, str]]:
    """The Docker images of board userspace a lab exports: (ref, name, tree, platform)."""
    out = [(RASPBIAN_IMAGE, "raspbian", recipes.RASPBIAN, "linux/arm/v7")]
    if any(a.name == "arm64" for a in arches):  # torch exists for arm64 only
        out.append((RASPBIAN_TORCH_IMAGE, "raspbian-torch", recipes.RASPBIAN_TORCH, "linux/arm64"))
    return out


@dataclass(frozen=True)
class Boot:
    """What one kind of board boots: its kernel, initramfs and base disk."""

    kernel: kernel.Kernel
    initrd: Path
    base: Path


def check_environment() -> None:
    """Raise EnvironmentMissing naming every missing package and the apt command."""
    gone = doctor.missing(doctor.tool_present)
    if gone:
        names = ", ".join(sorted({f"{r.what} ({r.package})" for r in gone}))
        raise EnvironmentMissing(f"missing: {names}", doctor.apt_command(gone))
    docker_ok = run(["docker", "info"], check=False).returncode == 0
    failed = [c for c in doctor.system_checks(docker_ok) if not c.ok]
    if failed:
        raise EnvironmentMissing(
            "not ready: " + ", ".join(c.name for c in failed), "; ".join(c.hint for c in failed)
        )


def build_artifacts(
    report: Report,
    arches: Sequence[BoardArch] = (arch_mod.DEFAULT,),
    netboot: bool = False,
    server_kind: str = DEFAULT_SERVER,
) -> tuple[dict[str, Boot], servervm.Artifacts | None]:
    """Everything the lab boots from, built once and cached: per kind of board in `arches`
    its kernel, initramfs and base disk.

    Also builds nfs-01 of `server_kind` (its Docker image, or its VM's disk and kernel), the
    Raspbian Docker image (with an arm64 board also the torch image), and with `netboot` the
    netboot image (what diskless boards boot, armhf). Every tree is built in one go, so both
    cores stay busy. Returns ({arch name: Boot}, the server VM's artifacts or None).
    """
    cache = paths.cache_dir() / "lab"
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    server_tree = recipes.SERVER_VM if server_kind == "kernel" else recipes.SERVER
    kinds = list(arches)
    if netboot and arch_mod.ARMHF not in kinds:
        kinds.append(arch_mod.ARMHF)
    trees = [t for a in kinds for t in (a.kernel, a.userspace)]
    trees += [server_tree, *(i[2] for i in _board_images(kinds))]
    builds.build_all(trees, cache, report)
    boot: dict[str, Boot] = {}
    for arch in kinds:
        ktar = images.rootfs(arch.kernel, cache, report)
        kern = kernel.unpack(ktar, cache / f"kernel-{arch.kernel.arch}-{arch.kernel.key}")
        kernel.qemu_image(kern)  # what the boards boot: for armhf, the kernel uncompressed
        initrd = kernel.build_initramfs(kern, cache)
        board_tar = images.rootfs(arch.userspace, cache, report)
        base = cache / f"board-disk-{disk.base_key(board_tar, kern, arch.name)}.img"
        if not base.exists():
            report(f"building the boards' base disk for {arch.name} (mke2fs -d)")
            disk.build_base(board_tar, kern, arch.name, cache)
        boot[arch.name] = Boot(kern, initrd, base)
        if netboot and arch.name == "armhf":
            netboot_image.build(board_tar, kern, cache, report)
    server_art = serverhost.build(server_kind, cache, report)
    for ref, name, tree, platform in _board_images(kinds):
        tar = images.rootfs(tree, cache, report)
        images.docker_image(ref, name, tar, serverhost.image_key(tree, name), platform, report)
    report(f"artifacts ready ({time.monotonic() - t0:.1f} s)")
    return boot, server_art
