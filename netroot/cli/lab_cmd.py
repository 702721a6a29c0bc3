"""`netroot lab up|status|down|doctor`: the virtual lab on this machine."""

from __future__ import annotations

import time
from enum import StrEnum
from pathlib import Path

import typer
from rich.markup import escape

from netroot.cli import context
from netroot.errors import Exit
from netroot.lab.arch import GPU_MEM_RANGE, LAB_GPU_MEM_MIB

lab_app = context.NetrootTyper(
    help="The virtual lab: an NFS server and ARM boards under QEMU on this machine.",
    short_help="The virtual lab: NFS servers and ARM boards under QEMU.",
    no_args_is_help=True,
)
UP_EPILOG = context.epilog(
    [
        ("netroot lab up", "an NFS server, a 32-bit board and a 64-bit torch board"),
        ("netroot lab up -n 3 --arm64 0", "three 32-bit boards"),
        ("netroot lab up -n 3 --arch arm64 --fresh", ""),
        ("netroot lab up -n 2 --netboot 1 --servers 2 --server kernel", ""),
    ],
    "0 up, 1 failed, 2 bad input, 5 a system package or Docker is missing (`netroot lab "
    "doctor` names it), 130 interrupted (`netroot lab status` shows what runs).",
)


class Arch(StrEnum):
    """--arch (netroot.lab.arch.ARCHES, checked by a test)."""

    ARMHF = "armhf"
    ARM64 = "arm64"


class BoardKind(StrEnum):
    """--board-kind (netroot.lab.plan.BOARD_KINDS)."""

    QEMU = "qemu"
    LIGHT = "light"


class ServerKind(StrEnum):
    """--server (netroot.lab.plan.SERVER_KINDS, checked by a test)."""

    GANESHA = "ganesha"
    KERNEL = "kernel"


def _interrupted_lab() -> str:
    return (
        "interrupted: the lab may be partly up; `netroot lab status` shows what runs, "
        "`netroot lab down` stops it"
    )


def _reporter(ctx: typer.Context) -> tuple[context.AppContext, float]:
    return context.get(ctx), time.monotonic()


@lab_app.command(
    "up", short_help="Build (once) and start the lab, until SSH-ready.", epilog=UP_EPILOG
)
def up_cmd(
    ctx: typer.Context,
    boards: int = typer.Option(
        2,
        "--boards",
        "-n",
        min=0,
        max=100,
        help="How many boards (0 only with --netboot; up to 32 QEMU boards, 100 light ones).",
    ),
    fresh: bool = typer.Option(False, "--fresh", help="Start boards from a clean SD-card disk."),
    boot: bool = typer.Option(
        False, "--boot", help="Boot the boards even if `lab down` saved their state."
    ),
    export_root: Path | None = typer.Option(
        None, "--export-root", help="The NFS export root (default: <lab dir>/export)."
    ),
    arch: Arch = typer.Option(
        Arch.ARMHF,
        "--arch",
        help="Board kernel: armhf (32-bit Raspberry Pi OS, armv7l) or arm64 (64-bit, aarch64).",
    ),
    arm64: int | None = typer.Option(
        None,
        "--arm64",
        min=0,
        max=32,
        help="How many of the boards (the last ones) are 64-bit boards running the torch "
        "image beside the 32-bit ones; default 1 with --arch armhf and 2 or more boards.",
    ),
    netboot: int = typer.Option(
        0,
        "--netboot",
        min=0,
        max=8,
        help="Also N diskless boards (no disk: U-Boot boots them from nfs-01 by DHCP and "
        "TFTP, root on NFS); powered on by `netroot provision`.",
    ),
    server: ServerKind = typer.Option(
        ServerKind.GANESHA,
        "--server",
        help="The NFS servers: ganesha (NFS-Ganesha in a container) or kernel (Linux's "
        "nfs-kernel-server in a Debian x86_64 VM of its own, reached over SSH as a sudo user).",
    ),
    servers: int = typer.Option(
        1,
        "--servers",
        min=1,
        max=4,
        help="How many NFS servers (nfs-01, nfs-02, ...): the boards are dealt out in turn, "
        "each mounting or booting from its own (netroot_nfs_server in the inventory).",
    ),
    board_kind: BoardKind = typer.Option(
        BoardKind.QEMU,
        "--board-kind",
        help="qemu: emulated ARM boards (the faithful ones); light: a container per board "
        "(x86, SD mode, a userspace NFS client), for scale only: docs/lab.md says what it "
        "does not model.",
    ),
    gpu_mem: int = typer.Option(
        LAB_GPU_MEM_MIB,
        "--gpu-mem",
        min=GPU_MEM_RANGE[0],
        max=GPU_MEM_RANGE[1],
        help="The boards' gpu_mem in MiB (netroot_gpu_mem in the inventory, written "
        "to their config.txt by provision); an arm64 board's RAM is 1024 MiB less it.",
    ),
) -> None:
    """Build (once, cached) and start the lab; returns when every host is SSH-ready."""
    from netroot.lab import arch as arch_mod
    from netroot.lab.host import service
    from netroot.lab.plan import default_arm64

    app, t0 = _reporter(ctx)
    app.on_interrupt = _interrupted_lab

    def report(msg: str) -> None:
        app.out.info(f"[cyan]{time.monotonic() - t0:6.1f}s[/cyan] {escape(msg)}", markup=True)

    if arm64 is None:
        arm64 = default_arm64(boards, arch.value, board_kind.value)
    plan = service.up(
        boards,
        report,
        fresh=fresh,
        export_root=export_root,
        boot=boot,
        arch=arch_mod.by_name(arch.value),
        netboot=netboot,
        server_kind=server.value,
        gpu_mem=gpu_mem,
        servers=servers,
        arm64=arm64,
        board_kind=board_kind.value,
    )
    app.out.info(f"inventory: {plan.lab_dir / 'inventory.yml'}")


@lab_app.command(
    "build",
    short_help="Build the lab's artifacts; start nothing.",
    epilog=context.epilog(
        [("netroot lab build", ""), ("netroot lab build --arch arm64", "")],
        "0 built, 1 failed, 5 a system package or Docker is missing.",
    ),
)
def build_cmd(
    ctx: typer.Context,
    arch: Arch = typer.Option(Arch.ARMHF, "--arch", help="Board kernel: armhf or arm64."),
    arm64: bool = typer.Option(
        True, "--arm64/--no-arm64", help="Also the 64-bit board's artifacts (the torch image)."
    ),
) -> None:
    """Build the lab's artifacts (once, cached) without starting anything; `up` builds them too."""
    from netroot.lab import arch as arch_mod
    from netroot.lab.host import service

    app, t0 = _reporter(ctx)

    def report(msg: str) -> None:
        app.out.info(f"[cyan]{time.monotonic() - t0:6.1f}s[/cyan] {escape(msg)}", markup=True)

    chosen = arch_mod.by_name(arch.value)
    service.check_environment()
    kinds = [chosen, arch_mod.ARM64] if arm64 and chosen is not arch_mod.ARM64 else [chosen]
    service.build_artifacts(report, kinds)


@lab_app.command("power-cycle", hidden=True)
def power_cycle_cmd(
    ctx: typer.Context, name: str = typer.Argument(..., help="A diskless board (nb-NN).")
) -> None:
    """Power a diskless board off and on (the lab's netroot_power_cycle_cmd)."""
    from netroot.lab.host import service

    app = context.get(ctx)
    service.power_cycle(name, lambda m: app.out.info(escape(m), markup=True))


@lab_app.command(
    "status",
    short_help="What runs: network, servers, boards (exit 1: not up).",
    epilog=context.epilog(
        [("netroot lab status", ""), ("netroot lab status --tsv", "")],
        "0 up, 1 not (wholly) up.",
    ),
)
def status_cmd(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output on stdout."),
) -> None:
    """What is running: network, server, boards (PID, SSH, memory). Exit 1 if not fully up."""
    from netroot.lab.host import service

    app = context.get(ctx)
    st = service.status()
    if as_json:
        app.out.json(st.to_json())
    else:
        rows = [
            (
                h.name,
                h.role,
                h.address,
                h.pid or "-",
                "yes" if h.ssh else "no",
                f"{h.rss_mib:.0f} MiB" if h.rss_mib else "-",
            )
            for h in st.hosts
        ]
        title = f"lab {'up' if st.up else 'not up'} (network {'yes' if st.network else 'no'})"
        app.out.table(title, ("host", "role", "address", "pid", "ssh", "rss"), rows)
    if not st.up:
        raise typer.Exit(int(Exit.FAILED))


@lab_app.command(
    "down",
    short_help="Stop the boards, the servers and the lab network.",
    epilog=context.epilog(
        [
            ("netroot lab down", "boards resume at the next `up`"),
            ("netroot lab down --no-save", "the next `up` boots them afresh"),
        ],
        "0 down (or nothing was running), 1 failed.",
    ),
)
def down_cmd(
    ctx: typer.Context,
    save: bool = typer.Option(
        True, "--save/--no-save", help="Save each board's state so the next `up` resumes it."
    ),
) -> None:
    """Stop every board (by PID), remove nfs-01 and the lab network. Disks and keys stay."""
    from netroot.lab.host import service

    app, t0 = _reporter(ctx)
    stopped = service.down(
        save=save,
        report=lambda m: app.out.info(
            f"[cyan]{time.monotonic() - t0:6.1f}s[/cyan] {escape(m)}", markup=True
        ),
    )
    app.out.info("lab down" + ("" if stopped else ": nothing was running"))


@lab_app.command(
    "doctor",
    short_help="Check the packages and conditions the lab needs.",
    epilog=context.epilog(
        [("netroot lab doctor", "")],
        "0 all there, 5 something missing (the apt command to fix it is printed).",
    ),
)
def doctor_cmd(ctx: typer.Context) -> None:
    """Check the system packages and conditions the lab needs; prints the apt command to fix."""
    from netroot.lab import doctor
    from netroot.run import run

    app = context.get(ctx)
    gone = doctor.missing(doctor.tool_present)
    for req in doctor.REQUIREMENTS:
        ok = req not in gone
        mark = "[green]     ok[/green]" if ok else "[red]missing[/red]"
        app.out.info(f"{mark} {escape(f'{req.what} ({req.package}: {req.why})')}", markup=True)
    docker_ok = (
        doctor.tool_present("docker") and run(["docker", "info"], check=False).returncode == 0
    )
    checks = doctor.system_checks(docker_ok)
    for check in checks:
        mark = "[green]     ok[/green]" if check.ok else "[red]     no[/red]"
        text = check.name + ("" if check.ok else f" -> {check.hint}")
        app.out.info(f"{mark} {escape(text)}", markup=True)
    if gone:
        app.out.error("missing packages", doctor.apt_command(gone))
    if gone or not all(c.ok for c in checks):
        raise typer.Exit(int(Exit.ENVIRONMENT))


def register(app: typer.Typer) -> None:
    app.add_typer(lab_app, name="lab")
