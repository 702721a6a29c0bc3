"""The QPU smoke stages S0-S11 (QPU.md): each reports status, evidence, diagnosis and remedy.

The stages talk only to a mailbox.Platform, so the same code runs on a real board
(LocalPlatform) and on a scripted FakeBoard. A failed stage blocks the later ones; cleanup
(S11) always runs. Stdlib-only (bundled).
"""

from __future__ import annotations

import datetime
import errno
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netroot.qpu import bootconfig
from netroot.qpu import mailbox as mb
from netroot.qpu.revision import describe_revision

DT_MODEL = "/proc/device-tree/model"
DT_V3D_STATUS = (
    "/proc/device-tree/soc/v3d@7ec00000/status",
    "/proc/device-tree/v3d@7ec00000/status",
)
QEMU_FIRMWARE_REVISION = 346337
V3D_PHYS = 0x3FC00000
V3D_IDENT0 = 0x02443356
FLOPS_PER_CYCLE = 12 * 4 * 2  # 12 QPUs x 4 lanes/cycle x (one add + one mul)
MAX_V3D_HZ = 400_000_000  # a Pi 3's v3d_freq
PEAK_GFLOPS = FLOPS_PER_CYCLE * MAX_V3D_HZ / 1e9  # 38.4, the figure at the top clock
FIX_BOOT_CONFIG = (
    f"set `{bootconfig.FIX_SETTING}` for this board in the inventory and run "
    "`netroot provision BOARD`: it comments out the vc4-kms-v3d/vc4-fkms-v3d lines, sets "
    "gpu_mem in a marked block of the board's config.txt and reboots the board"
)
NO_VC = "no VideoCore IV on this board"
NEWER_FAMILIES = ("Raspberry Pi", "Compute Module")  # "... 4", "... 5", "Raspberry Pi 400"
REMEDY_NO_VC = (
    "run the QPU smoke test on a Raspberry Pi 3B (or with --qpu skip / --qpu emulate "
    "where no VideoCore IV is expected)"
)
TITLES = {
    "S0": "root and device nodes in the chroot", "S1": "board model and revision",
    "S2": "mailbox round trip (firmware)", "S3": "V3D ownership and gpu_mem",
    "S4": "V3D clock, throttling, temperature", "S5": "enable the QPUs",
    "S6": "V3D identity registers", "S7": "allocate, lock, map, read back",
    "S8": "vector add on 1 QPU", "S9": "vector add on 12 QPUs",
    "S10": "launch latency and multiply-add GFLOPS", "S11": "cleanup: unlock, release, disable",
    "S12": "import torch (child process, time limit)",
    "S13": "torch operators on the QPU vs torch on the CPU",
    "S14": "matvec speed: QPU vs CPU, break-even",
}  # fmt: skip


@dataclass
class Stage:
    """One stage's outcome."""

    id: str
    title: str
    status: str  # pass | fail | skip | warn
    evidence: str
    diagnosis: str = ""
    remedy: str = ""


class NoVideoCore(Exception):
    """This board has no usable VideoCore IV: a skip under auto, a failure under require."""

    def __init__(self, reason: str, remedy: str = REMEDY_NO_VC) -> None:
        super().__init__(reason)
        self.reason, self.remedy = reason, remedy


@dataclass
class Context:
    """What the stages learn and hold, shared from S0 to the cleanup."""

    platform: mb.Platform
    kernels: dict[str, tuple[int, ...]]
    madd_iterations: int
    emulated: bool = False
    mbox: mb.Mailbox | None = None
    transport: mb.Transport | None = None
    gpu_mem: int = 0
    clock_hz: int = 0
    max_clock_hz: int = 0
    enabled: bool = False
    handle: int = 0
    locked: bool = False
    bus: int = 0
    window: mb.PhysicalWindow | None = None
    latency_s: float | None = None
    gflops: float | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def mailbox(self) -> mb.Mailbox:
        """The open mailbox (S1 opened it)."""
        if self.mbox is None:
            raise RuntimeError("mailbox used before S1 opened it")
        return self.mbox


def _stage(sid: str, status: str, evidence: str, diagnosis: str = "", remedy: str = "") -> Stage:
    return Stage(sid, TITLES[sid], status, evidence, diagnosis, remedy)


def peak_gflops(clock_hz: int) -> float:
    """The QPUs' peak at a V3D clock: 24 GFLOPS at 250 MHz, 38.4 at 400."""
    return FLOPS_PER_CYCLE * clock_hz / 1e9


def errno_text(exc: OSError) -> str:
    """'[Errno N] text' as Python prints the real error."""
    return f"[Errno {exc.errno}] {exc.strerror or exc}"


def s0_devices(ctx: Context) -> Stage:
    """Root, /dev/vcio and /dev/mem inside the chroot."""
    p = ctx.platform
    euid, vcio, mem = p.euid(), p.exists("/dev/vcio"), p.exists("/dev/mem")
    evidence = (
        f"euid={euid}; /dev/vcio {'present' if vcio else 'missing'}; "
        f"/dev/mem {'present' if mem else 'missing'}"
    )
    if not vcio:
        model = p.read_text(DT_MODEL) or "unknown"
        if "Raspberry Pi" not in model:
            raise NoVideoCore(f"{NO_VC}: no /dev/vcio, device tree model {model!r}")
        if any(f"{family} {n}" in model for family in NEWER_FAMILIES for n in "45"):
            raise NoVideoCore(
                f"unsupported board: {model} has no VideoCore IV (and no /dev/vcio here)",
                "run the QPU smoke test on a Raspberry Pi 3B; this board needs --qpu skip",
            )
        # A VideoCore IV Pi without /dev/vcio is a broken chroot, not a board without a GPU.
        return _stage(
            "S0",
            "fail",
            evidence,
            f"/dev/vcio is missing in the chroot of this {model}: /dev is not "
            "bind-mounted into the chroot, or the kernel has no vcio driver",
            "bind /dev into the chroot (mount --rbind /dev ROOT/dev, as netroot-mount "
            "does) and boot a Raspberry Pi kernel",
        )
    for failed, diagnosis, remedy in (
        (
            euid != 0,
            "not root: the mailbox and /dev/mem need root",
            "run the smoke program as root (netroot-chroot runs as root)",
        ),
        (
            not mem,
            "/dev/mem is missing in the chroot",
            "bind /dev into the chroot (mount --rbind /dev ROOT/dev)",
        ),
    ):
        if failed:
            return _stage("S0", "fail", evidence, diagnosis, remedy)
    return _stage("S0", "pass", evidence)


def s1_board(ctx: Context) -> Stage:
    """Open the mailbox; the board revision says whether this is a 3B with a VideoCore IV."""
    try:
        ctx.transport = ctx.platform.open_transport()
    except OSError as exc:
        return _stage(
            "S1",
            "fail",
            f"opening /dev/vcio failed: {errno_text(exc)}",
            "the mailbox device cannot be opened",
            "run as root on a Raspberry Pi kernel with /dev bound into the chroot",
        )
    ctx.mbox = mb.Mailbox(ctx.transport)
    request = ctx.transport.request
    size = request >> 16 & 0x3FFF  # _IOC's size field: the pointer size it was built for
    ioctl = f"ioctl 0x{request:08x} ({mb.userspace_name(size)} userspace)"
    try:
        rev = ctx.mailbox().board_revision()
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        return _stage(
            "S1",
            "fail",
            f"{ioctl}: {errno_text(exc)}",
            "the mailbox driver refused the property ioctl number: it must match the "
            "userspace that issues it (0xC0046400 from 32-bit, 0xC0086400 from 64-bit)",
            "run the smoke program with the chroot's own python3 (netroot does); report a "
            "mismatch as a bug",
        )
    text, kind, proc = describe_revision(rev)
    ctx.facts["board_revision"] = rev & 0x7FFFFFFF
    ctx.facts["board"] = text
    if proc is not None and proc >= 3:
        core = "VideoCore VI" if proc == 3 else "VideoCore VII"
        raise NoVideoCore(
            f"unsupported board: {text} has a {core}, not a VideoCore IV",
            "run the QPU smoke test on a Raspberry Pi 3B; this board needs --qpu skip",
        )
    if kind != 0x08:
        return _stage(
            "S1",
            "warn",
            f"{text}; {ioctl}",
            "not a Raspberry Pi 3B, but a VideoCore IV board: the stages still apply",
        )
    return _stage("S1", "pass", f"{text}; {ioctl}")


def s2_firmware(ctx: Context) -> Stage:
    """Firmware revision and variant; QEMU's fixed revision means an emulated board."""
    box = ctx.mailbox()
    fw = box.firmware_revision()
    ctx.facts["firmware_revision"] = fw
    if fw == QEMU_FIRMWARE_REVISION:
        raise NoVideoCore(
            f"{NO_VC}: firmware revision {fw} is QEMU's emulated Raspberry Pi "
            "firmware (an emulated board)"
        )
    built = datetime.datetime.fromtimestamp(fw, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    try:
        variant = f"variant {box.firmware_variant()}"
    except mb.PropertyError as exc:
        variant = f"variant not reported ({exc.kind})"
    return _stage("S2", "pass", f"firmware revision {fw} (built {built}), {variant}")


def s3_ownership(ctx: Context) -> Stage:
    """Is V3D the kernel's (vc4 driver)? How much memory does the GPU have? What config.txt says."""
    p = ctx.platform
    statuses = {path: p.read_text(path) for path in DT_V3D_STATUS}
    owned = [f"{path} = {s!r}" for path, s in statuses.items() if s == "okay"]
    if p.exists("/sys/module/vc4"):
        owned.append("/sys/module/vc4 present")
    config = p.boot_config()
    lines = bootconfig.qpu_lines(config) if config else None
    quoted = f"config.txt: {bootconfig.describe(config)}"
    if owned:
        if lines is not None and not lines.overlays:
            why = (
                "the kernel's vc4 driver owns V3D although config.txt loads no vc4 overlay: "
                "the board has not been rebooted since config.txt changed"
            )
            remedy = "reboot the board (`netroot provision BOARD` reboots it when it changes)"
        else:
            why = (
                "the kernel's vc4 driver owns V3D (dtoverlay=vc4-kms-v3d or vc4-fkms-v3d): "
                "the firmware refuses to enable or execute the QPUs"
            )
            remedy = FIX_BOOT_CONFIG + " (the board's boot partition, not the chroot)"
        return _stage("S3", "fail", "; ".join(owned) + f"; {quoted}", why, remedy)
    base, size = ctx.mailbox().vc_memory()
    ctx.gpu_mem = size
    seen = ", ".join(f"{path.split('/')[-2]} {s!r}" for path, s in statuses.items() if s)
    evidence = (
        f"V3D not claimed by the kernel ({seen or 'no v3d node'}, no vc4 module); "
        f"gpu_mem {size >> 20} MiB at 0x{base:08x}; {quoted}"
    )
    if size < 32 << 20:
        return _stage(
            "S3",
            "warn",
            evidence,
            f"gpu_mem is only {size >> 20} MiB: gpu_mem=16 disables 3D and allocations will fail",
            FIX_BOOT_CONFIG + " (gpu_mem defaults to 128 there)",
        )
    if lines is not None and lines.overlays:
        return _stage(
            "S3",
            "warn",
            evidence,
            "config.txt loads a vc4 overlay that this boot did not apply: after the next "
            "reboot the kernel will own V3D and the QPU tags will be refused",
            FIX_BOOT_CONFIG,
        )
    return _stage("S3", "pass", evidence)


def s4_clock(ctx: Context) -> Stage:
    """V3D clock (sets the real peak), throttling flags and temperature; warnings only."""
    box, notes, problems = ctx.mailbox(), [], []
    remedy = "check the power supply and cooling; GFLOPS will be lower"
    try:
        ctx.clock_hz = box.clock_rate(mb.CLOCK_V3D)
        notes.append(
            f"V3D clock {ctx.clock_hz / 1e6:.0f} MHz (peak {peak_gflops(ctx.clock_hz):.1f} "
            "GFLOPS at this clock)"
        )
    except mb.PropertyError as exc:
        problems.append(f"V3D clock not reported ({exc.kind})")
    try:
        ctx.max_clock_hz = box.max_clock_rate(mb.CLOCK_V3D)
        notes.append(f"board maximum {ctx.max_clock_hz / 1e6:.0f} MHz")
    except mb.PropertyError as exc:
        notes.append(f"board maximum not reported ({exc.kind})")
    if ctx.clock_hz and ctx.max_clock_hz and ctx.clock_hz < ctx.max_clock_hz:
        # A Pi 3's firmware runs V3D at v3d_freq_min when idle and drops it while the QPUs
        # wait on DMA (firmware #664, #1123): S10's peak follows the clock read here.
        problems.append(
            f"V3D runs at {ctx.clock_hz / 1e6:.0f} MHz, below the board's maximum "
            f"{ctx.max_clock_hz / 1e6:.0f} MHz: the firmware scales it with load, so GFLOPS "
            f"are scored against {peak_gflops(ctx.clock_hz):.1f}, not "
            f"{peak_gflops(ctx.max_clock_hz):.1f}"
        )
        remedy = (
            "for full-speed measurements set force_turbo=1 in the board's config.txt and "
            "reboot (without over_voltage it does not set the warranty bit)"
        )
    try:
        flags = box.throttled()
        notes.append(f"throttled=0x{flags:x}")
        if flags & 0xF:
            problems.append(f"throttling now (flags 0x{flags:x}: under-voltage/capped/throttled)")
    except mb.PropertyError as exc:
        problems.append(f"throttling flags not reported ({exc.kind})")
    try:
        milli = box.temperature()
        notes.append(f"temperature {milli / 1000:.1f} C")
        if milli >= 80_000:
            problems.append(f"hot: {milli / 1000:.1f} C")
    except mb.PropertyError as exc:
        problems.append(f"temperature not reported ({exc.kind})")
    if problems:
        return _stage("S4", "warn", "; ".join(notes), "; ".join(problems), remedy)
    return _stage("S4", "pass", "; ".join(notes))


def s5_enable(ctx: Context) -> Stage:
    """Ask the firmware to power up the QPUs."""
    reply = ctx.mailbox().enable_qpu(True)
    if reply != 0:
        return _stage(
            "S5",
            "fail",
            f"enable QPU (tag 0x30012) replied 0x{reply:08x}",
            "the firmware refused to enable the QPUs",
            "check the board's config.txt for a vc4 overlay and that the full "
            "firmware (start.elf, not start_cd.elf) boots; then reboot",
        )
    ctx.enabled = True
    return _stage("S5", "pass", "enable QPU replied 0")


def map_failure(sid: str, what: str, exc: OSError) -> Stage:
    """The stage result for a refused /dev/mem mapping, with the real errno."""
    return _stage(
        sid,
        "fail",
        f"mapping /dev/mem at {what} failed: {errno_text(exc)}",
        "/dev/mem refused the mapping: the kernel restricts /dev/mem "
        "(CONFIG_STRICT_DEVMEM) or the process is not root / lacks CAP_SYS_RAWIO",
        "run as root; if the kernel is strict, boot with iomem=relaxed",
    )


def s6_identity(ctx: Context) -> Stage:
    """IDENT0 must read 'V3D' v2 and IDENT1 must count 12 QPUs."""
    try:
        window = ctx.platform.map_physical(V3D_PHYS, 4096)
    except OSError as exc:
        return map_failure("S6", f"0x{V3D_PHYS:08x} (V3D registers)", exc)
    try:
        ident0, ident1 = window.read_words(0, 2)
    finally:
        window.close()
    slices, per_slice = (ident1 >> 4) & 15, (ident1 >> 8) & 15
    evidence = f"IDENT0=0x{ident0:08x} IDENT1=0x{ident1:08x}: {slices} slices x {per_slice} QPUs"
    if ident0 == 0xDEADBEEF:
        return _stage(
            "S6",
            "fail",
            evidence,
            "IDENT0 reads 0xdeadbeef: the V3D block is not powered",
            "the enable in S5 did not take effect: reboot, and check the firmware",
        )
    if ident0 != V3D_IDENT0:
        return _stage(
            "S6",
            "fail",
            evidence,
            f"IDENT0 is not 0x{V3D_IDENT0:08x} ('V3D' v2): "
            "no VideoCore IV V3D there, or it is powered off",
            "check S5 (enable) and that this is a Raspberry Pi 2/3",
        )
    if slices * per_slice != 12:
        return _stage(
            "S6",
            "fail",
            evidence,
            f"{slices * per_slice} QPUs, expected 12",
            "this is not a BCM2835/6/7 V3D as the smoke test expects",
        )
    return _stage("S6", "pass", evidence)


StageFn = Callable[[Context], Stage]
