"""The board's boot config.txt as the QPU smoke test reads it (pure, stdlib-only, bundled).

The smoke program runs inside the chroot, where the board's boot partition (/boot/firmware
since Bookworm, /boot before) is usually not visible. So the host-side runner reads the file on
the board itself, outside the chroot (`PROBE`, parsed by `parse_probe`), and the text travels
into the program with the kernel words. S3 then quotes the lines that decide whether the QPUs
can run: an active `dtoverlay=vc4-kms-v3d` / `vc4-fkms-v3d` (the kernel's vc4 driver takes V3D
and the firmware refuses the QPU tags) and `gpu_mem` (16 disables 3D).
"""

from __future__ import annotations

from dataclasses import dataclass

# The places Raspberry Pi OS mounts its FAT boot partition, newest first. On Bookworm
# /boot/config.txt is a stub saying the file moved, so /boot/firmware must win.
PATHS = ("/boot/firmware/config.txt", "/boot/config.txt")
PROBE = (
    "for f in " + " ".join(PATHS) + "; do "
    'if [ -r "$f" ]; then echo "$f"; cat "$f"; exit 0; fi; done; exit 1'
)
VC4_OVERLAYS = ("vc4-kms-v3d", "vc4-fkms-v3d")
# Conditional sections naming a board model; only these apply to a Pi 3B (QPU.md: the smoke
# test targets the 3B). Any other filter ([HDMI:1], [gpio4=1], serials...) may apply.
MODEL_FILTERS = {
    "pi0", "pi0w", "pi02", "pi1", "pi2", "pi3", "pi3+", "pi4", "pi400", "pi5", "pi500",
    "cm1", "cm3", "cm3+", "cm4", "cm4s", "cm5", "none",
}  # fmt: skip
APPLY_TO_3B = {"all", "pi3"}
FIX_SETTING = "netroot_qpu_boot_config: true"


@dataclass(frozen=True)
class BootConfig:
    """config.txt as read on the board: where it was found and its text."""

    path: str
    text: str


@dataclass(frozen=True)
class Line:
    """One setting line of config.txt that matters to the QPUs."""

    number: int  # 1-based, as an editor shows it
    text: str
    section: str  # "all" outside any filter

    def quote(self, path: str) -> str:
        """'PATH:N: text' plus the section when it is not [all]."""
        where = "" if self.section == "all" else f" (in [{self.section}])"
        return f"{path}:{self.number}: {self.text}{where}"


@dataclass(frozen=True)
class QpuLines:
    """The lines that apply to a 3B: active vc4 overlays and gpu_mem settings."""

    overlays: tuple[Line, ...]
    gpu_mem: tuple[Line, ...]


def parse_probe(rc: int, stdout: str) -> BootConfig | None:
    """`PROBE`'s output: the first line names the file, the rest is its text; None if absent."""
    if rc != 0 or not stdout.strip():
        return None
    path, _, text = stdout.partition("\n")
    return BootConfig(path.strip(), text)


def _applies(section: str) -> bool:
    filters = [f.strip().lower() for f in section.split("][")]
    model = [f for f in filters if f in MODEL_FILTERS]
    return all(f in APPLY_TO_3B for f in model) if model else True


def qpu_lines(config: BootConfig) -> QpuLines:
    """The active settings of `config` that apply to a Pi 3B and matter to the QPUs."""
    section, overlays, gpu_mem = "all", [], []
    for number, raw in enumerate(config.text.splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        if text.startswith("[") and text.endswith("]"):
            section = text[1:-1].strip() or "all"
            continue
        if not _applies(section):
            continue
        key, _, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if key == "dtoverlay" and value.split(",")[0].strip() in VC4_OVERLAYS:
            overlays.append(Line(number, text, section))
        elif key == "gpu_mem" or key.startswith("gpu_mem_"):
            gpu_mem.append(Line(number, text, section))
    return QpuLines(tuple(overlays), tuple(gpu_mem))


def describe(config: BootConfig | None) -> str:
    """The lines S3 quotes: the vc4 overlays and gpu_mem found, or why none were read."""
    if config is None:
        return f"no config.txt at {' or '.join(PATHS)} on the board"
    found = qpu_lines(config)
    quoted = [line.quote(config.path) for line in (*found.overlays, *found.gpu_mem)]
    if not quoted:
        return f"{config.path}: no vc4-kms-v3d/vc4-fkms-v3d overlay, no gpu_mem line (default)"
    return "; ".join(quoted)
