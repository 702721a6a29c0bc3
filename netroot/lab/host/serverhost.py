"""The lab's NFS servers (nfs-01, nfs-02, ...), whichever kind the lab runs (chosen once, by
`lab up --server`): NFS-Ganesha in a container each (server.py) or nfs-kernel-server
in a QEMU machine each (servervm.py). How many there are is `lab up --servers`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from netroot import paths
from netroot.lab import recipes, supervise
from netroot.lab.host import boards, diskless, images, ready, seeds, server, servervm
from netroot.lab.host.boards import BoardFiles
from netroot.lab.plan import (
    BOARD_USER,
    DEFAULT_SERVER,
    SERVER_IMAGE,
    LabPlan,
    ServerPlan,
    letting_go,
    server_plan,
)
from netroot.paths import project_file
from netroot.run import run

Report = Callable[[str], None]
Found = tuple[str, str, str, int | None, float | None]  # name, role, address, pid, RSS MiB


def image_key(recipe: recipes.Recipe, recipe_dir: str) -> str:
    """A Docker image's cache key: its recipe and the files of its build context."""
    h = hashlib.sha256(recipe.key.encode())
    for f in sorted(project_file("images", recipe_dir).iterdir()):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def build(kind: str, cache: Path, report: Report) -> servervm.Artifacts | None:
    """Build (once, cached) what a server of `kind` runs: the VM's disk and kernel, or the
    container image (then None). Every server of the lab runs the same."""
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


def running_pid(lab_dir: Path, kind: str, srv: ServerPlan = servervm.NFS_01) -> int | None:
    """The PID of server `srv` of `kind` (the container's init, or qemu), if it runs."""
    if kind == "kernel":
        return servervm.running_pid(lab_dir, srv)
    return server.running_pid(srv.container)


def start(
    plan: LabPlan,
    client_pub: str,
    art: servervm.Artifacts | None,
    fresh: bool,
    report: Report,
    was: int = 1,
) -> None:
    """Every server of the plan running, of the plan's kind; the other kind stopped; boards
    that change server (the lab had `was` servers) let go of the old one; servers beyond the
    plan stopped."""
    if plan.server == "kernel":
        for name in server.containers():
            if server.remove(name):
                report(f"removed the ganesha server {name} (this lab's are --server kernel)")
    else:
        for vm in servervm.vm_dirs(plan.lab_dir):
            if servervm.stop(servervm.ServerFiles(vm)):
                report(f"stopped the kernel server VM {vm.name} (this lab's are --server ganesha)")
    for srv in plan.nfs:
        if plan.server == "kernel":
            if servervm.running_pid(plan.lab_dir, srv) is not None and not fresh:
                continue
            if art is None:
                raise ValueError("the kernel server's artifacts were not built")
            report(f"booting kernel server VM {srv.name} at {srv.address} (x86_64 under TCG)")
            servervm.start(plan, srv, seeds.server_vm_seed(plan, srv, client_pub), art, fresh)
            continue
        srv.export_root.mkdir(parents=True, exist_ok=True)  # the kernel VM's is on its disk
        if server.running_pid(srv.container) is None:
            report(f"starting {srv.name} at {srv.address} (NFS-Ganesha in a container)")
            server.start(plan, srv, seeds.server_seed(plan, srv, client_pub))
    _rehome(plan, was, report)
    for name in _beyond(plan):
        report(f"stopped {name} (the lab has {len(plan.nfs)} server(s) now)")


def _rehome(plan: LabPlan, was: int, report: Report) -> None:
    """Boards whose server changes with the number of servers let go of their old one.

    A diskless board is powered off (its root is the old server's; provision boots it from
    the new one). A board that mounts its version over NFS unmounts it (as `lab down`
    quiesces it): a mount of a server that goes away is a stale handle its next netroot-mount
    could not unmount, and a board moved to a server that stays was once seen failing to
    remount from the new one (bench_servers); unmounted, its next provision mounts it as a
    board with nothing mounted, the path the e2e proves.
    """
    unmount, power_off = letting_go(plan, was)
    for board in power_off:
        if diskless.stop(BoardFiles(board.dir(plan.lab_dir))):
            report(f"powered off {board.name} (its server is now {plan.server_of(board).name}: "
                   "provision boots it from there)")  # fmt: skip
    running = [b for b in unmount if boards.running_pid(BoardFiles(b.dir(plan.lab_dir)))]
    if not running:
        return
    key, kh = plan.key, plan.known_hosts

    def let_go(address: str) -> bool:
        argv = ready.ssh_argv(address, key, kh, boards.QUIESCE, user=BOARD_USER)
        return run(argv, check=False, timeout=60).returncode == 0

    with ThreadPoolExecutor(max_workers=len(running)) as pool:
        done = list(pool.map(let_go, [b.address for b in running]))
    for board, ok in zip(running, done, strict=True):
        how = "unmounted its version" if ok else "could not unmount its version (not answering)"
        report(f"{board.name} moves to {plan.server_of(board).name}: {how}")


def _beyond(plan: LabPlan) -> list[str]:
    """Stop the servers of this lab that the plan does not have; their names."""
    planned = {s.name for s in plan.nfs}
    stopped = []
    for container in server.containers():
        name = container.removeprefix("netroot-lab-")
        if name not in planned and server.remove(container):
            stopped.append(name)
    for vm in servervm.vm_dirs(plan.lab_dir):
        name = servervm.name_of(vm)
        if name not in planned and servervm.stop(servervm.ServerFiles(vm)):
            stopped.append(name)
    return stopped


def stop_all(lab_dir: Path | None = None) -> list[str]:
    """Stop every server of the lab, of either kind; the names of those that were running."""
    vms = servervm.vm_dirs(lab_dir or paths.lab_dir())
    stopped = [servervm.name_of(vm) for vm in vms if servervm.stop(servervm.ServerFiles(vm))]
    stopped += [name for name in server.containers() if server.remove(name)]
    return [name.removeprefix("netroot-lab-") for name in stopped]


def found(lab_dir: Path, saved: Mapping[str, Any]) -> list[Found]:
    """The lab's servers as `lab status` lists them, from what `lab up` saved."""
    kind = str(saved.get("server") or DEFAULT_SERVER)
    root = Path(saved.get("export_root") or lab_dir / "export")
    count = int(saved.get("servers") or 1)
    rows: list[Found] = []
    for srv in (server_plan(i, root, kind) for i in range(1, count + 1)):
        pid = running_pid(lab_dir, kind, srv)
        # The VM's RSS is the server's cost; the container's processes are not one PID's.
        rss = supervise.rss_kib(pid) if pid and kind == "kernel" else None
        rows.append((srv.name, "server", srv.address, pid, round(rss / 1024, 1) if rss else None))
    return rows


def not_ready_hint(plan: LabPlan, late: list[str]) -> str | None:
    """Where to look when servers never came up (None if every server did)."""
    gone = [s for s in plan.nfs if s.name in late]
    if not gone:
        return None
    if plan.server == "kernel":
        logs = [str(servervm.files_of(plan.lab_dir, s).console) for s in gone]
        return "see the console logs: " + ", ".join(logs)
    return "; ".join(f"docker logs {s.container}" for s in gone)
