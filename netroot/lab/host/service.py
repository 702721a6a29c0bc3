"""`netroot lab up|status|down|doctor`: build (cached), start, check and stop the virtual lab."""

from __future__ import annotations

import fcntl
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from netroot import paths
from netroot.errors import EnvironmentMissing, NetrootError, UsageError
from netroot.lab import (
    arch as arch_mod,
)
from netroot.lab import state, supervise
from netroot.lab.arch import BoardArch
from netroot.lab.host import (
    boards,
    disk,
    diskless,
    kernel,
    lightboards,
    network,
    ready,
    seeds,
    server,
    serverhost,
)
from netroot.lab.host.artifacts import Boot
from netroot.lab.host.artifacts import build_artifacts as build_artifacts  # re-exported
from netroot.lab.host.artifacts import check_environment as check_environment  # re-exported
from netroot.lab.host.boards import BoardFiles
from netroot.lab.plan import (
    BOARD_USER,
    DEFAULT_BOARD_KIND,
    DEFAULT_SERVER,
    NETNS,
    SERVER_KINDS,
    BoardPlan,
    LabPlan,
    board_plan,
    light_plan,
    make_plan,
    netboot_plan,
)
from netroot.run import run

Report = Callable[[str], None]
READY_TIMEOUT = 600.0  # a cold first boot under TCG on a busy 2-core machine


@contextmanager
def _locked(lab_dir: Path) -> Iterator[None]:
    """One `lab up`/`lab down` at a time (tests of several agents may share a lab)."""
    lab_dir.mkdir(parents=True, exist_ok=True)
    with (lab_dir / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def power_cycle_command() -> list[str]:
    """How Ansible, on this host, power-cycles a diskless board of this lab (name appended)."""
    home = f"NETROOT_HOME={paths.state_dir()}"
    return ["env", home, sys.executable, "-m", "netroot", "lab", "power-cycle"]


# Each kind of board by its name's prefix: how board N of that kind is planned.
_PLANS: dict[str, Callable[[int], BoardPlan]] = {
    "pi-": board_plan,
    "nb-": netboot_plan,
    "lb-": light_plan,
}


def _existing_boards(lab_dir: Path, prefix: str = "pi-") -> list[BoardPlan]:
    """Boards with a directory in the lab (pi-NN; nb-NN: the diskless ones)."""
    make = _PLANS[prefix]
    found = []
    for d in sorted((lab_dir / "boards").glob(f"{prefix}*")):
        try:
            found.append(make(int(d.name.removeprefix(prefix))))
        except (ValueError, NetrootError):
            continue
    return found


def _prepare_diskless(plan: LabPlan, client_pub: str, report: Report) -> None:
    """Give the server the diskless boards' seeds; stop diskless boards no longer planned.

    They are not powered on here: a diskless board can only boot once the server's dnsmasq
    and its TFTP directory exist, which is `netroot provision`'s work; provision finds it
    unreachable and powers it on with its netroot_power_cycle_cmd, as on a real lab.
    """
    wanted = {b.name for b in plan.netboot}
    for extra in _existing_boards(plan.lab_dir, "nb-"):
        if extra.name not in wanted and diskless.stop(BoardFiles(extra.dir(plan.lab_dir))):
            report(f"stopped {extra.name} (not in a lab of {len(plan.netboot)} diskless)")
    if not plan.netboot:
        return
    for srv in plan.nfs:
        if any(b.netboot for b in plan.boards_of(srv)):
            server.copy_in(seeds.netboot_seeds(plan, srv, client_pub), srv.container)
    for board in plan.netboot:
        on = diskless.running_pid(BoardFiles(board.dir(plan.lab_dir))) is not None
        state_ = "running" if on else "powered off until `netroot provision` boots it"
        report(f"{board.name} (diskless, serial {board.serial}) at {board.address}: {state_}")


def up(
    boards_wanted: int,
    report: Report,
    fresh: bool = False,
    export_root: Path | None = None,
    boot: bool = False,
    arch: BoardArch = arch_mod.DEFAULT,
    netboot: int = 0,
    server_kind: str = DEFAULT_SERVER,
    gpu_mem: int = arch_mod.LAB_GPU_MEM_MIB,
    servers: int = 1,
    arm64: int = 0,
    board_kind: str = DEFAULT_BOARD_KIND,
) -> LabPlan:
    """Bring the lab to `boards_wanted` boards of `arch` (armhf: the last `arm64` of them 64-bit,
    the torch image's), all SSH-ready; reuses what is up.

    A board with a saved state (from `lab down`) taken of the same machine resumes from it
    unless `boot`; `fresh` also gives every board a clean disk. A running board of another
    arch is stopped and booted anew (on a disk over that arch's base). `netboot` diskless
    boards join the inventory and the network powered off (see `_prepare_diskless`). The
    `servers` NFS servers (nfs-01, ...; the boards dealt out in turn) are `server_kind`:
    NFS-Ganesha in a container, or nfs-kernel-server in a VM of its own each; a running lab
    whose servers change kind is saved and stopped first (`down`), then resumed.
    `gpu_mem` goes into the inventory (provision writes it into each board's config.txt) and
    sets an arm64 board's RAM (1024 MiB less it); a running board of another RAM size is
    stopped and booted anew. `board_kind` light: the boards are light boards
    (lightboards.py; for scale only), and a running lab's boards of the other kind are stopped.
    """
    lab_dir = paths.lab_dir()
    # Every option is checked before anything is stopped or started: bad input must leave a
    # running lab as it is (the server-kind switch below takes a running lab down).
    make_plan(
        boards_wanted,
        lab_dir,
        export_root,
        arch.name,
        netboot,
        server_kind,
        gpu_mem=gpu_mem,
        servers=servers,
        arm64=arm64,
        board_kind=board_kind,
    )
    if netboot and arch.name != "armhf":
        raise UsageError(f"--netboot with --arch {arch.name}", "diskless boards are armhf")
    check_environment()
    if netboot and not diskless.UBOOT.is_file():
        raise EnvironmentMissing(
            f"{diskless.UBOOT}: no U-Boot for the diskless boards", diskless.UBOOT_HINT
        )
    was = str(state.load(lab_dir / "state.json").get("server") or DEFAULT_SERVER)
    if was != server_kind and server_kind in SERVER_KINDS and status().anything_running:
        # A board would keep its mounts of a server that is gone: stale NFS handles that its
        # next netroot-mount cannot unmount. Saved by `down` (nothing mounted), then resumed.
        report(f"nfs-01 changes from {was} to {server_kind}: the lab is saved and stopped first")
        down(report)
    with _locked(lab_dir):
        previous = state.load(lab_dir / "state.json")
        root = export_root or Path(previous.get("export_root") or lab_dir / "export")
        plan = make_plan(
            boards_wanted,
            lab_dir,
            root,
            arch.name,
            netboot,
            server_kind,
            gpu_mem=gpu_mem,
            servers=servers,
            arm64=arm64,
            board_kind=board_kind,
        )
        if plan.light:
            lightboards.build_lab(report)
            boot_of: dict[str, Boot] = {}
            server_art = None
        else:
            kinds = [arch_mod.by_name(a) for a in plan.arches]
            boot_of, server_art = build_artifacts(report, kinds, netboot > 0, plan.server)
        client_pub = seeds.write_identity(plan, power_cycle_command())
        t0 = time.monotonic()
        network.create(plan)
        state.save(plan.state_file, boards_wanted, root, plan.arch, netboot, plan.server, servers,
                   arm64, plan.board_kind)  # fmt: skip
        had = int(previous.get("servers") or 1)
        serverhost.start(plan, client_pub, server_art, fresh, report, had)
        _prepare_diskless(plan, client_pub, report)
        wanted = {b.name for b in plan.boards}
        for extra in _existing_boards(lab_dir):
            if extra.name not in wanted and boards.stop(BoardFiles(extra.dir(lab_dir))):
                report(f"stopped {extra.name} (not in a lab of {boards_wanted})")
        for extra in _existing_boards(lab_dir, "lb-"):
            if extra.name not in wanted and lightboards.remove(extra):
                report(f"removed {extra.name} (not in a lab of {boards_wanted} light boards)")
        light_pids = lightboards.start_all(plan, client_pub, report) if plan.light else {}
        resumed = [] if plan.light else _start_qemu(plan, boot_of, fresh, boot, client_pub, report)
        nfs = {s.name: s for s in plan.nfs}
        hosts = {s.name: s.address for s in plan.all_hosts}
        board_files = {b.name: BoardFiles(b.dir(lab_dir)) for b in plan.boards}

        def alive(name: str) -> bool:
            if name in nfs:
                return serverhost.running_pid(lab_dir, plan.server, nfs[name]) is not None
            if name in light_pids:  # its container's init, without a docker call per poll
                return Path(f"/proc/{light_pids[name]}").exists()
            return boards.running_pid(board_files[name]) is not None

        def on_ready(name: str, after: float) -> None:
            report(f"{name} ssh-ready ({after:.1f} s)")

        users = {n: plan.server_user if n in nfs else BOARD_USER for n in hosts}
        late = ready.wait_all(
            hosts, users, plan.key, plan.known_hosts, READY_TIMEOUT, on_ready, alive
        )
        if late:
            consoles = [str(board_files[n].console) for n in late if n in board_files]
            hints = [f"see the console logs: {', '.join(consoles)}"] if consoles else []
            hints += filter(None, [serverhost.not_ready_hint(plan, late)])
            raise NetrootError(f"not ssh-ready: {', '.join(late)}", "; ".join(hints))
        report(
            f"lab up: {len(plan.boards)} boards ssh-ready {time.monotonic() - t0:.1f} s after start"
        )
        if resumed:  # saved with their mounts stopped, and the server starts with no exports
            report(
                "resumed boards have no version mounted until the server is provisioned again: "
                "`netroot provision boards` (or a rollout) mounts them"
            )
        return plan


def _start_qemu(
    plan: LabPlan,
    boot_of: dict[str, Boot],
    fresh: bool,
    boot: bool,
    client_pub: str,
    report: Report,
) -> list[BoardPlan]:
    """Start the QEMU boards not running, each of its arch; returns those resumed from a save."""
    lab_dir = plan.lab_dir
    resumed: list[BoardPlan] = []
    for board in plan.boards:
        files = BoardFiles(board.dir(lab_dir))
        kind, boot_files = arch_mod.by_name(board.arch), boot_of[board.arch]
        kern = kernel.qemu_image(boot_files.kernel)
        machine = boards.Machine(kern, boot_files.initrd, kind, plan.gpu_mem)
        if boards.running_pid(files) is not None:
            memory = machine.memory_mib()
            if boards.arch_of(files) == kind.name and boards.memory_of(files) == memory:
                continue
            boards.stop(files)
            report(f"stopped {board.name} (not an {kind.name} board of {memory} MiB)")
        disk.overlay(boot_files.base, files.disk, fresh)  # a new base: a new disk
        files.seed.write_bytes(seeds.board_seed(board, files, client_pub))
        if boot:
            files.snapshot_marker.unlink(missing_ok=True)
        if boards.start(board, files, machine):
            resumed.append(board)
            report(f"resuming {board.name} at {board.address} from its saved state")
        else:
            report(f"booting {board.name} at {board.address}")
    return resumed


def _found_boards(
    lab_dir: Path,
    role: str,
    planned: int,
    prefix: str,
    running_pid: Callable[[BoardFiles], int | None],
) -> list[serverhost.Found]:
    """The boards of one kind a status lists: the planned ones, and any beyond still running."""
    seen = {b.name: b for b in _existing_boards(lab_dir, prefix)}
    for i in range(1, planned + 1):
        board = _PLANS[prefix](i)
        seen.setdefault(board.name, board)
    found: list[serverhost.Found] = []
    for board in sorted(seen.values(), key=lambda b: b.index):
        pid = running_pid(BoardFiles(board.dir(lab_dir)))
        if pid is None and board.index > planned:
            continue
        rss = supervise.rss_kib(pid) if pid else None
        found.append((board.name, role, board.address, pid, round(rss / 1024, 1) if rss else None))
    return found


def status() -> state.LabStatus:
    """What is running now, from pidfiles and the container, with an SSH banner probe each."""
    lab_dir = paths.lab_dir()
    saved = state.load(lab_dir / "state.json")
    planned = int(saved.get("boards") or 0)
    found = serverhost.found(lab_dir, saved)
    if saved.get("board_kind") == "light":
        found += lightboards.found(lab_dir, planned, _existing_boards(lab_dir, "lb-"))
    else:
        found += _found_boards(lab_dir, "board", planned, "pi-", boards.running_pid)
    netboot = int(saved.get("netboot") or 0)
    found += _found_boards(lab_dir, "diskless", netboot, "nb-", diskless.running_pid)
    # Probe every host at once: a busy emulated board can take seconds to answer.
    with ThreadPoolExecutor(max_workers=len(found)) as pool:
        banners = list(pool.map(lambda f: f[3] is not None and ready.ssh_banner(f[2]), found))
    hosts = tuple(
        state.HostStatus(name, role, addr, pid, pid is not None, ok, rss)
        for (name, role, addr, pid, rss), ok in zip(found, banners, strict=True)
    )
    return state.LabStatus(
        network=network.netns_exists(NETNS),
        hosts=hosts,
        inventory=str(paths.lab_inventory()),
        boards_planned=planned,
    )


def healthy(lab_status: state.LabStatus) -> bool:
    """Up, and every host accepts the lab's key with a host key that matches known_hosts."""
    if not lab_status.up:
        return False
    lab_dir = paths.lab_dir()
    key, kh = lab_dir / "id_ed25519", lab_dir / "known_hosts"
    kind = str(state.load(lab_dir / "state.json").get("server") or DEFAULT_SERVER)
    server_user = make_plan(1, lab_dir, server=kind).server_user
    with ThreadPoolExecutor(max_workers=len(lab_status.hosts)) as pool:
        return all(
            pool.map(
                lambda h: ready.ssh_ok(
                    h.address, key, kh, server_user if h.role == "server" else BOARD_USER
                ),
                [h for h in lab_status.hosts if h.role != "diskless"],
            )
        )


def _save(board: BoardPlan, files: BoardFiles, lab_dir: Path) -> bool:
    key, kh = lab_dir / "id_ed25519", lab_dir / "known_hosts"
    argv = ready.ssh_argv(board.address, key, kh, boards.QUIESCE, user=BOARD_USER)
    if run(argv, check=False, timeout=60).returncode != 0:
        return False
    return boards.suspend(files)


def down(report: Report, save: bool = True) -> list[str]:
    """Stop every board (by PID), nfs-01 (container or VM) and the lab network.

    With `save`, each board's state is first saved into its own disk (QEMU savevm), so the next
    `lab up` resumes it in seconds instead of booting it under emulation.
    """
    lab_dir = paths.lab_dir()
    stopped: list[str] = []
    with _locked(lab_dir):
        for board in _existing_boards(lab_dir):
            files = BoardFiles(board.dir(lab_dir))
            if save and boards.running_pid(files) is not None:
                t0 = time.monotonic()
                if _save(board, files, lab_dir):
                    report(f"saved {board.name}'s state ({time.monotonic() - t0:.1f} s)")
            elif not save:
                files.snapshot_marker.unlink(missing_ok=True)
            if boards.stop(files):
                stopped.append(board.name)
                report(f"stopped {board.name}")
        for board in _existing_boards(lab_dir, "nb-"):
            if diskless.stop(BoardFiles(board.dir(lab_dir))):
                stopped.append(board.name)
                report(f"powered off {board.name} (diskless: nothing to save)")
        for name in lightboards.remove_all():
            stopped.append(name)
            report(f"removed {name} (light board: its card goes with it)")
        for name in serverhost.stop_all(lab_dir):
            stopped.append(name)
            report(f"removed {name}")
        for item in network.destroy():
            stopped.append(item)
            report(f"removed {item}")
        (lab_dir / "state.json").unlink(missing_ok=True)
    return stopped


def power_cycle(name: str, report: Report) -> None:
    """Power a diskless board off and on again (its inventory's netroot_power_cycle_cmd)."""
    lab_dir = paths.lab_dir()
    planned = int(state.load(lab_dir / "state.json").get("netboot") or 0)
    boards_ = {b.name: b for b in (netboot_plan(i) for i in range(1, planned + 1))}
    board = boards_.get(name)
    if board is None:
        known = ", ".join(boards_) or "none"
        raise UsageError(f"{name}: not a diskless board of the lab (diskless: {known})")
    pid = diskless.power_cycle(board, BoardFiles(board.dir(lab_dir)))
    report(f"{name} powered on (qemu pid {pid})")
