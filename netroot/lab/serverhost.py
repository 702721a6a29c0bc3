"""nfs-01, whichever kind the lab runs (chosen once, by `lab up --server`): NFS-Ganesha in a
container (netroot/lab/server.py) or nfs-kernel-server in a QEMU machine (servervm.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from netroot import paths
from netroot.lab import images, recipes, seeds, server, servervm
from netroot.lab.plan import SERVER_IMAGE, LabPlan
from netroot.paths import project_file

Report = Callable[[str], None]


def image_key(recipe: recipes.Recipe, recipe_dir: str) -> str:
    """A Docker image's cache key: its recipe and the files of its build context."""
    h = hashlib.sha256(recipe.key.encode())
    for f in sorted(project_file("images", recipe_dir).iterdir()):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def build(kind: str, cache: Path, report: Report) -> servervm.Artifacts | None:
    """Build (once, cached) what nfs-01 of `kind` runs: the VM's disk and kernel, or the
    container image (then None)."""
    if kind == "kernel":
        tar = images.rootfs(recipes.SERVER_VM, cache, report)
        art = servervm.artifacts_for(tar, cache)
        if not art.base.exists():
            report("building the kernel server's base disk (mke2fs -d)")
        return servervm.build(tar, cache)
    server_tar = images.rootfs(recipes.SERVER, cache, report)
    key = image_key(recipes.SERVER, "server")
    images.docker_image(SERVER_IMAGE, "server", server_tar, key, "linux/amd64", report)
    return None


def running_pid(lab_dir: Path, kind: str) -> int | None:
    """The PID of nfs-01 of `kind` (the container's init, or qemu), if it runs."""
    return servervm.running_pid(lab_dir) if kind == "kernel" else server.running_pid()


def start(
    plan: LabPlan, client_pub: str, art: servervm.Artifacts | None, fresh: bool, report: Report
) -> None:
    """nfs-01 of the plan's kind running; the other kind stopped (one nfs-01 on the bridge)."""
    if plan.server == "kernel":
        if server.remove():
            report("removed the ganesha server (this lab's server is --server kernel)")
        if servervm.running_pid(plan.lab_dir) is not None and not fresh:
            return
        if art is None:
            raise ValueError("the kernel server's artifacts were not built")
        report(f"booting {plan.server} server VM nfs-01 (x86_64 under TCG)")
        servervm.start(plan, seeds.server_vm_seed(plan, client_pub), art, fresh)
        return
    if servervm.stop(plan.lab_dir):
        report("stopped the kernel server VM (this lab's server is --server ganesha)")
    if server.running_pid() is None:
        report("starting nfs-01 (NFS-Ganesha in a container)")
        server.start(plan, seeds.server_seed(plan, client_pub))


def stop_all(lab_dir: Path | None = None) -> bool:
    """Stop nfs-01 of either kind; True if one was running."""
    vm = servervm.stop(lab_dir or paths.lab_dir())
    container = server.remove()
    return vm or container
