"""Light boards (`netroot lab up --board-kind light`): a privileged container per board, for
scale only.

Each is Debian of the host's arch booting systemd (images/light-board), with sshd, the stock `pi`
sudo user and /boot/firmware of the emulated boards' card, on the lab bridge at its own
address. This host's kernel has no NFS client, so `mount -t nfs` on a light board runs a
userspace client through FUSE (images/light-board/mount.nfs): the same board role, mount and
chroot scripts, smoke and rollout run on it unchanged, against the lab's real NFS server.

A board is two containers: `<name>-net` holds its network namespace (a `sleep` with the lab's
veth), and the board itself joins it (`--network container:`), so a reboot (systemd's PID 1
exits, Docker's restart policy starts the board again) comes back on the same eth0 and address.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from netroot import paths
from netroot.errors import NetrootError
from netroot.lab import recipes
from netroot.lab.host import artifacts, images, network, seeds, serverhost
from netroot.lab.host.boards import BoardFiles
from netroot.lab.host.server import DOCKER_HINT, privilege_args
from netroot.lab.plan import (
    DEFAULT_SERVER,
    LIGHT_IMAGE,
    LIGHT_VERSION_IMAGE,
    BoardPlan,
    LabPlan,
    light_plan,
)
from netroot.paths import project_file
from netroot.run import run

Report = Callable[[str], None]
LABEL = "netroot.lab=light-board"
# The userspace NFS client, pinned: the image is named by what went into it.
NFS_RS = "nfs-rs==0.8.7"


def container(board: BoardPlan) -> str:
    return f"netroot-lab-{board.name}"


def net_container(board: BoardPlan) -> str:
    return f"netroot-lab-{board.name}-net"


def _wheels(cache: Path, report: Report) -> Path:
    """nfs-rs's wheel for this host, fetched once with pip into the cache."""
    where = cache / f"wheels-{NFS_RS.replace('==', '-')}"
    if not any(where.glob("*.whl")):
        report(f"fetching {NFS_RS} (a wheel, with pip) for the light boards' NFS client")
        where.mkdir(parents=True, exist_ok=True)
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
             "--python-version", "3.11", "-d", str(where), NFS_RS],
            hint="pip must reach PyPI once to fetch nfs-rs")  # fmt: skip
    return where


def _image(tar: Path, wheels: Path, key: str, report: Report) -> None:
    """The light board image: its tree, the card's customize script, mount.nfs, nfs-rs."""
    if images.docker_image_label(LIGHT_IMAGE) == key:
        return
    report(f"building Docker image {LIGHT_IMAGE}")
    ctx = tar.parent / "tmp" / "ctx-light-board"
    shutil.rmtree(ctx, ignore_errors=True)
    shutil.copytree(project_file("images", "light-board"), ctx)
    shutil.copy(project_file("images", "board", "customize.sh"), ctx / "board-customize.sh")
    shutil.copytree(wheels, ctx / "wheels")
    os.link(tar, ctx / "rootfs.tar")
    try:
        run(["docker", "build", "--pull=false", "-q", "-t", LIGHT_IMAGE,
             "--build-arg", f"NETROOT_RECIPE={key}", str(ctx)], hint=DOCKER_HINT)  # fmt: skip
    finally:
        shutil.rmtree(ctx, ignore_errors=True)


def build(cache: Path, report: Report) -> None:
    """What a light lab needs beyond the Ganesha server: the board image and the version image
    the boards run (`netroot export netroot-lab/light:bookworm`), built once and cached."""
    recipes_ = [recipes.LIGHT_BOARD, recipes.LIGHT_VERSION]
    for recipe in recipes_:
        images.rootfs(recipe, cache, report)
    wheels = _wheels(cache, report)
    board_tar = cache / recipes.LIGHT_BOARD.filename
    # Its recipe and build context, the card's script it runs and the wheel it unpacks.
    extra = [project_file("images", "board", "customize.sh"), *sorted(wheels.glob("*.whl"))]
    key = serverhost.image_key(recipes.LIGHT_BOARD, "light-board") + "-" + _digest(extra)
    _image(board_tar, wheels, key, report)
    version_tar = cache / recipes.LIGHT_VERSION.filename
    key = serverhost.image_key(recipes.LIGHT_VERSION, "light")
    images.docker_image(LIGHT_VERSION_IMAGE, "light", version_tar, key, "linux/amd64", report)


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


def _inspect(name: str) -> dict[str, object] | None:
    proc = run(["docker", "container", "inspect", name], check=False)
    if proc.returncode != 0:
        return None
    data = json.loads(proc.stdout)
    return data[0] if data else None


def pids(names: list[str]) -> dict[str, int]:
    """The init PID of each running container among `names` (one docker call for all)."""
    if not names:
        return {}
    proc = run(["docker", "container", "inspect", "-f", "{{.Name}} {{.State.Pid}}", *names],
               check=False)  # fmt: skip
    found = {}
    for line in proc.stdout.decode().splitlines():
        name, _, pid = line.strip().lstrip("/").partition(" ")
        if pid.isdigit() and int(pid) > 0:
            found[name] = int(pid)
    return found


def running_pid(board: BoardPlan) -> int | None:
    return pids([container(board)]).get(container(board))


def start(plan: LabPlan, board: BoardPlan, seed: bytes) -> bool:
    """Start `board` unless it runs; True if it was already running (kept as it is).

    Its seed (host key, hostname, machine-id, authorized_keys) goes in before systemd starts.
    """
    if running_pid(board) is not None and _inspect(net_container(board)):
        return True
    remove(board)
    common = ["--pull", "never", *privilege_args(), "--label", LABEL]
    run(["docker", "run", "-d", *common, "--name", net_container(board), "--network", "none",
         "--entrypoint", "/bin/sleep", LIGHT_IMAGE, "infinity"], hint=DOCKER_HINT)  # fmt: skip
    net = pids([net_container(board)]).get(net_container(board))
    if net is None:
        raise NetrootError(f"{net_container(board)} did not stay up")
    network.attach_container(net, board.tap, board.address, plan.prefixlen)
    run(
        [
            "docker", "create", *common, "--name", container(board),
            "--network", f"container:{net_container(board)}",
            "--restart", "unless-stopped",  # a reboot: systemd exits, Docker starts it again
            "--device", "/dev/fuse",
            "--tmpfs", "/run:exec,mode=755", "--tmpfs", "/run/lock",
            # The chroot's writable layers (netroot_board_layer: disk) on a real filesystem:
            # overlayfs takes no upper dir on the container's own overlay root.
            "-v", "/var/lib/netroot",
            "--cgroupns", "private",
            LIGHT_IMAGE,
        ],
        hint=DOCKER_HINT,
    )  # fmt: skip
    run(["docker", "cp", "-", f"{container(board)}:/"], input=seed, hint=DOCKER_HINT)
    run(["docker", "start", container(board)], hint=DOCKER_HINT)
    return False


def remove(board: BoardPlan) -> bool:
    """Remove the board's containers (its card goes with them: a light board's state is not
    kept across `lab down`)."""
    names = [n for n in (container(board), net_container(board)) if _inspect(n) is not None]
    if names:
        run(["docker", "rm", "-f", "-v", *names], hint=DOCKER_HINT)
    return bool(names)


def all_containers() -> list[str]:
    """Every light board container there is, running or not (by the label)."""
    proc = run(["docker", "ps", "-a", "--filter", f"label={LABEL}", "--format", "{{.Names}}"],
               check=False)  # fmt: skip
    return sorted(proc.stdout.decode().split()) if proc.returncode == 0 else []


def remove_all() -> list[str]:
    """Remove every light board (boards first, then what holds their networks)."""
    names = all_containers()
    boards = [n for n in names if not n.endswith("-net")]
    for batch in (boards, [n for n in names if n.endswith("-net")]):
        if batch:
            run(["docker", "rm", "-f", "-v", *batch], check=False)
    return [n.removeprefix("netroot-lab-") for n in boards]


def build_lab(report: Report) -> None:
    """A light lab's artifacts: the Ganesha server's image and the light boards' images."""
    artifacts.check_environment()
    cache = paths.cache_dir() / "lab"
    cache.mkdir(parents=True, exist_ok=True)
    serverhost.build(DEFAULT_SERVER, cache, report)
    build(cache, report)


# Each board's systemd takes inotify instances of the host's per-user budget (Linux's default
# 128: systemd in the 43rd board failed to start, exit 255, over and over).
INOTIFY = Path("/proc/sys/fs/inotify/max_user_instances")
INOTIFY_PER_BOARD = 16


def _inotify_for(boards: int, report: Report) -> None:
    want = 256 + INOTIFY_PER_BOARD * boards
    have = int(INOTIFY.read_text())
    if have < want:
        INOTIFY.write_text(f"{want}\n")
        report(f"fs.inotify.max_user_instances {have} -> {want} (systemd in {boards} boards)")


def start_all(plan: LabPlan, client_pub: str, report: Report) -> dict[str, int]:
    """Start every light board not running (several at a time: each is a few docker calls);
    their containers' init PIDs by board name."""
    _inotify_for(len(plan.boards), report)

    def one(board: BoardPlan) -> None:
        files = BoardFiles(board.dir(plan.lab_dir))
        seed = seeds.board_seed(board, files, client_pub)
        kept = start(plan, board, seed)
        report(f"{'kept' if kept else 'started'} {board.name} (light board) at {board.address}")

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one, plan.boards))
    names = {container(b): b.name for b in plan.boards}
    return {names[c]: pid for c, pid in pids(list(names)).items()}


def found(lab_dir: Path, planned: int, existing: list[BoardPlan]) -> list[serverhost.Found]:
    """The light boards a status lists: the planned ones and any still running."""
    seen = {b.name: b for b in existing}
    for i in range(1, planned + 1):
        seen.setdefault(light_plan(i).name, light_plan(i))
    running = pids([container(b) for b in seen.values()])
    found: list[serverhost.Found] = []
    for board in sorted(seen.values(), key=lambda b: b.index):
        pid = running.get(container(board))
        if pid is None and board.index > planned:
            continue
        found.append((board.name, "board", board.address, pid, None))
    return found
