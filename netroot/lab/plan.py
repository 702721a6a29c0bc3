"""The lab's address plan and names, computed as data before anything is created (pure)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace
from pathlib import Path

from netroot.errors import UsageError
from netroot.lab.arch import GPU_MEM_RANGE, LAB_GPU_MEM_MIB

NETNS = "netroot-lab"
BRIDGE = "nrbr0"
SUBNET = ipaddress.ip_network("10.77.0.0/24")
HOST_ADDRESS = "10.77.0.1"  # the host's end of the veth into the lab
SERVER_ADDRESS = "10.77.0.2"  # nfs-01's; nfs-0N is 10.77.0.(1+N)
SERVER_NAME = "nfs-01"
MAX_SERVERS = 4  # 10.77.0.2-5: below the boards' addresses
FIRST_BOARD = 11  # pi-01 is 10.77.0.11
MAX_BOARDS = 32
FIRST_NETBOOT = 51  # nb-01, the first diskless board, is 10.77.0.51
MAX_NETBOOT = 8
FIRST_LIGHT = 101  # lb-001, the first light board, is 10.77.0.101
MAX_LIGHT = 100
# What `--boards N` starts: QEMU ARM boards (the faithful ones, the default), or light boards,
# a container each (netroot/lab/host/lightboards.py), for scale only.
BOARD_KINDS = ("qemu", "light")
DEFAULT_BOARD_KIND = "qemu"
LIGHT_IMAGE = "netroot-lab/light-board:bookworm"  # a light board's own OS
LIGHT_VERSION_IMAGE = "netroot-lab/light:bookworm"  # what light boards run (export "light")
LIGHT_EXPORT = "light"
SERVER_INTERFACE = "eth0"  # nfs-01's link to the lab bridge (dnsmasq listens there)
TFTP_ROOT = "/srv/netroot-tftp"  # nfs-01's TFTP root (the server role's default)
HOST_VETH = "nr-host"  # host side; its peer in the lab namespace is nr-host-br
SERVER_VETH = "nr-srv-br"  # lab side of the server's link; the container side is eth0
SERVER_CONTAINER = "netroot-lab-nfs-01"
SERVER_IMAGE = "netroot-lab/server:bookworm"
RASPBIAN_IMAGE = "netroot-lab/raspbian:bookworm"
RASPBIAN_TORCH_IMAGE = "netroot-lab/raspbian-torch:bookworm"  # arm64, Debian's python3-torch
ARM64_EXPORT = "raspbian-torch"  # the export name a mixed lab's 64-bit boards run
NETBOOT_IMAGE = "netroot-lab/raspbian-netboot:bookworm"  # what diskless boards boot
NETBOOT_EXPORT = "raspbian-netboot"  # its export name (`netroot export` takes the last part)
BOARD_USER = "pi"  # the imaging user of Raspberry Pi OS: passwordless sudo, root refused
NOSUDO_USER = "student"  # a second login whose sudo asks for a password
SERVER_USER = "admin"  # the kernel server VM's sudo user (root login refused, as on a server)
# What serves NFS in the lab: NFS-Ganesha in a container, or Linux's own nfs-kernel-server in
# a QEMU x86_64 machine of its own (netroot/lab/host/servervm.py).
SERVER_KINDS = ("ganesha", "kernel")
DEFAULT_SERVER = "ganesha"


@dataclass(frozen=True)
class BoardPlan:
    """One board: its name, address and the devices that carry it."""

    index: int  # 1-based
    name: str
    address: str
    mac: str
    tap: str
    serial: str = ""  # a diskless board's: the name of its TFTP directory
    arch: str = "armhf"  # netroot.lab.arch: the kind of board (32-bit or 64-bit OS, kernel)

    @property
    def netboot(self) -> bool:
        """A diskless board: no disk at all, it boots from the lab server's dnsmasq."""
        return bool(self.serial)

    def dir(self, lab_dir: Path) -> Path:
        return lab_dir / "boards" / self.name


@dataclass(frozen=True)
class ServerPlan:
    """One NFS server machine of the lab: nfs-0N at 10.77.0.(1+N), its export root and the
    names of what carries it. nfs-01 keeps the names of a one-server lab (its container,
    veth, tap and directories), so a running lab stays what it was."""

    index: int  # 1-based
    name: str
    address: str
    export_root: Path

    @property
    def mac(self) -> str:
        return stable_mac(self.address)

    @property
    def _suffix(self) -> str:
        return "" if self.index == 1 else f"-{self.name}"

    @property
    def container(self) -> str:
        """The Ganesha server's container."""
        return f"netroot-lab-{self.name}"

    @property
    def veth(self) -> str:
        """The lab side of the Ganesha container's link (the container side is eth0)."""
        return SERVER_VETH if self.index == 1 else f"nr-srv{self.index}-br"

    @property
    def tap(self) -> str:
        """The kernel server VM's tap on the lab bridge."""
        return f"nrsrv{self.index - 1}"  # nrsrv0: nfs-01's

    def dir(self, lab_dir: Path) -> Path:
        """Its SSH host key (kept across restarts, whatever the kind)."""
        return lab_dir / f"server{self._suffix}"

    def vm_dir(self, lab_dir: Path) -> Path:
        """The kernel server VM's disks, pidfile, console and monitor."""
        return lab_dir / f"server-vm{self._suffix}"


def server_plan(index: int, export_root: Path, kind: str = "ganesha") -> ServerPlan:
    """Server `index` (1-based). Ganesha serves a directory of this host: each server its own
    (`<export root>-nfs-0N` beside nfs-01's). A kernel server VM has its export root on its own
    disk: the same path on every server."""
    if not 1 <= index <= MAX_SERVERS:
        raise UsageError(f"server number {index} out of range", f"use 1..{MAX_SERVERS}")
    name = f"nfs-{index:02d}"
    root = export_root
    if index > 1 and kind == "ganesha":
        root = export_root.with_name(f"{export_root.name}-{name}")
    address = str(SUBNET.network_address + 1 + index)
    return ServerPlan(index=index, name=name, address=address, export_root=root)


@dataclass(frozen=True)
class LabPlan:
    """Everything `lab up` will create, for `boards` boards."""

    lab_dir: Path
    export_root: Path
    boards: tuple[BoardPlan, ...]
    arch: str = "armhf"  # the lab's default kind of board (its arm64 boards aside)
    prefixlen: int = SUBNET.prefixlen
    netboot: tuple[BoardPlan, ...] = ()  # the diskless boards
    server: str = DEFAULT_SERVER  # one of SERVER_KINDS: what every server of the lab runs
    servers: tuple[ServerPlan, ...] = ()  # nfs-01.., each serving its share of the boards
    gpu_mem: int = LAB_GPU_MEM_MIB  # netroot_gpu_mem of every disk board (config.txt, RAM)
    board_kind: str = DEFAULT_BOARD_KIND  # what `boards` are: one of BOARD_KINDS

    @property
    def light(self) -> bool:
        """Light boards (containers, for scale only) instead of the QEMU ones."""
        return self.board_kind == "light"

    @property
    def nfs(self) -> tuple[ServerPlan, ...]:
        """The lab's NFS servers (nfs-01 alone unless planned otherwise)."""
        return self.servers or (server_plan(1, self.export_root, self.server),)

    def server_of(self, board: BoardPlan) -> ServerPlan:
        """The server a board mounts or boots from: the boards are dealt out in turn (pi-01
        nfs-01, pi-02 nfs-02, ...), so growing the lab never moves a board that is there."""
        nfs = self.nfs
        return nfs[(board.index - 1) % len(nfs)]

    def boards_of(self, server: ServerPlan) -> tuple[BoardPlan, ...]:
        return tuple(b for b in self.all_boards if self.server_of(b) == server)

    @property
    def server_user(self) -> str:
        """Who the control host logs in as on nfs-01: root in the container, a sudo user on
        the kernel server VM (which refuses root, as a real server should)."""
        return SERVER_USER if self.server == "kernel" else "root"

    @property
    def arches(self) -> tuple[str, ...]:
        """The kinds of board the lab has (what `lab up` builds artifacts for), default first."""
        found = {b.arch for b in self.all_boards}
        return tuple(sorted(found, key=lambda a: (a != self.arch, a))) or (self.arch,)

    @property
    def arm64(self) -> tuple[BoardPlan, ...]:
        """The 64-bit boards of a mixed lab (they run the torch image)."""
        return tuple(b for b in self.boards if b.arch == "arm64")

    @property
    def all_boards(self) -> tuple[BoardPlan, ...]:
        return self.boards + self.netboot

    @property
    def all_hosts(self) -> tuple[ServerPlan | BoardPlan, ...]:
        """What `lab up` waits for: the servers and the boards with a disk (the diskless ones
        are powered on by provision)."""
        return self.nfs + self.boards

    @property
    def key(self) -> Path:
        return self.lab_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.lab_dir / "known_hosts"

    @property
    def state_file(self) -> Path:
        return self.lab_dir / "state.json"

    @property
    def server_dir(self) -> Path:
        return self.nfs[0].dir(self.lab_dir)


def stable_mac(address: str) -> str:
    """The lab's MAC for a lab address: fixed, so a board resumed from a saved state (whose ARP
    cache still holds it) reaches a recreated server or host veth at once. A new random MAC on
    each `lab up` left resumed boards sending NFS to a dead MAC until the entry aged out: a
    first NFSv4.1 mount after a resume could hang for over 120 s."""
    host = int(ipaddress.ip_address(address)) - int(SUBNET.network_address)
    return f"52:54:00:77:00:{host:02x}"


def _plan(index: int, kind: str, prefix: str, first: int, limit: int, tap: str) -> BoardPlan:
    if not 1 <= index <= limit:
        raise UsageError(f"{kind} number {index} out of range", f"use 1..{limit}")
    address = str(SUBNET.network_address + first + index - 1)
    return BoardPlan(
        index=index,
        name=f"{prefix}-{index:02d}",
        address=address,
        mac=stable_mac(address),
        tap=f"{tap}{index}",
    )


def board_plan(index: int) -> BoardPlan:
    """Board `index` (1-based): pi-NN at 10.77.0.(10+N), a stable locally administered MAC."""
    return _plan(index, "board", "pi", FIRST_BOARD, MAX_BOARDS, "nrtap")


def light_plan(index: int) -> BoardPlan:
    """Light board `index` (1-based): lb-NNN at 10.77.0.(100+N); its veth is nrlbN."""
    plan = _plan(index, "light board", "lb", FIRST_LIGHT, MAX_LIGHT, "nrlb")
    return replace(plan, name=f"lb-{index:03d}")


def netboot_plan(index: int) -> BoardPlan:
    """Diskless board `index` (1-based): nb-NN at 10.77.0.(50+N), serial 4e420000 + N."""
    plan = _plan(index, "diskless board", "nb", FIRST_NETBOOT, MAX_NETBOOT, "nrnb")
    return replace(plan, serial=f"{0x4E420000 + index:08x}")


def default_arm64(boards: int, arch: str, board_kind: str) -> int:
    """How many 64-bit boards a lab gets when not told: one (the torch board, the last) in an
    armhf QEMU lab of two boards or more, so the default lab and the demo show both kinds of board;
    none otherwise (one board stays the 32-bit canary; light boards are amd64)."""
    return 1 if arch == "armhf" and boards >= 2 and board_kind != "light" else 0


def make_plan(
    boards: int,
    lab_dir: Path,
    export_root: Path | None = None,
    arch: str = "armhf",
    netboot: int = 0,
    server: str = DEFAULT_SERVER,
    gpu_mem: int = LAB_GPU_MEM_MIB,
    servers: int = 1,
    arm64: int = 0,
    board_kind: str = DEFAULT_BOARD_KIND,
) -> LabPlan:
    """The plan for `boards` boards (of `board_kind`) and `netboot` diskless ones under
    `lab_dir`, split over `servers` NFS servers. With `arch` armhf, the last `arm64` QEMU boards
    are 64-bit ones (a real lab mixes both OSes on the same 3Bs): the highest numbers, so the
    32-bit canary pi-01 and the boards before them stay what they were. Light boards are all
    amd64 (docs/lab.md). The CLI's default for `arm64` is default_arm64's."""
    low, high = GPU_MEM_RANGE
    if not low <= gpu_mem <= high:
        raise UsageError(
            f"--gpu-mem {gpu_mem}: expected {low}..{high} MiB",
            "gpu_mem=16 disables the 3D block; 128 is the Raspberry Pi default for a 3B",
        )
    if server not in SERVER_KINDS:
        raise UsageError(f"--server {server}: unknown", f"use one of {', '.join(SERVER_KINDS)}")
    if netboot and server != "ganesha":
        raise UsageError(
            f"--netboot with --server {server}", "diskless boards are served by --server ganesha"
        )
    if not 0 <= netboot <= MAX_NETBOOT:
        raise UsageError(f"--netboot {netboot}: expected 0..{MAX_NETBOOT}")
    if board_kind not in BOARD_KINDS:
        raise UsageError(f"--board-kind {board_kind}: unknown", f"use {' or '.join(BOARD_KINDS)}")
    light = board_kind == "light"
    if light and (netboot or server != "ganesha"):
        raise UsageError(
            "--board-kind light with --netboot or --server kernel",
            "light boards are SD-mode boards served by --server ganesha",
        )
    if light and arm64:
        raise UsageError(
            f"--arm64 {arm64} with --board-kind light", "light boards are amd64: use --arm64 0"
        )
    if light and not 1 <= boards <= MAX_LIGHT:
        raise UsageError(f"--boards {boards}: expected 1..{MAX_LIGHT} light boards")
    if not light and (boards < (0 if netboot else 1) or boards > MAX_BOARDS):
        raise UsageError(f"--boards {boards}: expected 1..{MAX_BOARDS} (0 with --netboot)")
    if not 1 <= servers <= MAX_SERVERS:
        raise UsageError(f"--servers {servers}: expected 1..{MAX_SERVERS}")
    if not 0 <= arm64 <= boards or (arm64 and arch != "armhf"):
        raise UsageError(
            f"--arm64 {arm64} with {boards} {arch} board(s)",
            f"use 0..{boards} 64-bit boards beside armhf ones (--arch arm64 makes all 64-bit)",
        )
    if servers > boards + netboot:
        raise UsageError(
            f"--servers {servers} with {boards + netboot} board(s) in all",
            "a server with no board to serve: use at most one server per board",
        )
    root = export_root or lab_dir / "export"
    return LabPlan(
        lab_dir=lab_dir,
        export_root=root,
        boards=tuple(
            light_plan(i)
            if light
            else replace(board_plan(i), arch="arm64" if i > boards - arm64 else arch)
            for i in range(1, boards + 1)
        ),
        arch="amd64" if light else arch,
        netboot=tuple(netboot_plan(i) for i in range(1, netboot + 1)),
        server=server,
        gpu_mem=gpu_mem,
        servers=tuple(server_plan(i, root, server) for i in range(1, servers + 1)),
        board_kind=board_kind,
    )


def moved_boards(plan: LabPlan, was: int) -> list[tuple[BoardPlan, int]]:
    """The boards whose server changes when a lab of `was` servers becomes `plan`, each with
    the number of its old server."""
    moved = []
    for board in plan.all_boards:
        old = (board.index - 1) % max(1, was) + 1
        if old != plan.server_of(board).index:
            moved.append((board, old))
    return moved


def letting_go(plan: LabPlan, was: int) -> tuple[list[BoardPlan], list[BoardPlan]]:
    """What must let go of its server when a lab of `was` servers becomes `plan`: the boards
    with a disk whose server changes (they unmount their version; the next provision mounts
    it from the new one), and the diskless boards whose server changes (powered off: their
    root is the old server's)."""
    moved = [b for b, _ in moved_boards(plan, was)]
    return [b for b in moved if not b.netboot], [b for b in moved if b.netboot]
