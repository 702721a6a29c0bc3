"""Build the self-contained smoke program sent over SSH and run with `python3 -` on the board.

The program (netroot.bundle.program) carries our stdlib-only modules as source strings, the
kernel words assembled here on the host (the same bytes the emulator and the hardware run), and
a call to program.main. The emulator and the fake board are included only in emulate mode.
"""

from __future__ import annotations

from netroot import bundle
from netroot.qpu import hazards, kernels, opkernels
from netroot.qpu.bootconfig import BootConfig
from netroot.qpu.modes import check_mode


def module_names(mode: str) -> tuple[str, ...]:
    """The netroot.qpu modules the program for `mode` carries, in load order."""
    extra = bundle.EMULATE_MODULES if check_mode(mode) == "emulate" else ()
    return (*bundle.CORE_MODULES[:4], *extra, *bundle.CORE_MODULES[4:])


def _checked_words(found_kernels: dict[str, kernels.Kernel]) -> dict[str, tuple[int, ...]]:
    words = {k.name: k.words for k in found_kernels.values()}
    for name, kernel_words in words.items():
        found = hazards.check(kernel_words)
        if found:  # never ship a kernel the checker rejects
            raise ValueError(f"kernel {name}: {'; '.join(map(str, found))}")
    return words


def _literal(words: dict[str, tuple[int, ...]]) -> str:
    lines = ",\n".join(
        f"    {name!r}: ({', '.join(f'0x{w:016x}' for w in ws)},)" for name, ws in words.items()
    )
    return f"{{\n{lines}\n}}"


def build_torch_script(mode: str, body: str) -> str:
    """A Python 3 source that opens the QPUs in `mode` ("hardware" or "emulate"), registers
    torch.ops.netroot.{add,mul,matvec} on them, runs `body` (with `QPU`, the open
    opsrun.QpuOps, and `EMULATED` in scope), and closes the QPUs. Needs torch where it runs."""
    if mode not in ("hardware", "emulate"):
        raise ValueError(f"torch script mode {mode!r}: expected 'hardware' or 'emulate'")
    emulate = bundle.EMULATE_MODULES if mode == "emulate" else ()
    script = bundle.SCRIPT_MODULES
    names = (*script[:3], *emulate, *script[3:], *bundle.TORCH_MODULES)
    return bundle.program(
        f"netroot torch operators, mode {mode!r}",
        (bundle.LOADER, *bundle.qpu(names)),
        f"OP_KERNELS = {_literal(_checked_words(opkernels.op_kernels()))}",
        "from netroot.qpu import torchops as _torchops",
        f"QPU, _LIBRARY = _torchops.open_registered({mode!r}, OP_KERNELS)",
        "EMULATED = QPU.emulated",
        f"try:\n    exec(compile({body!r}, '<netroot-torch-body>', 'exec'))\n"
        "finally:\n    QPU.close()",
    )


def torch_command(mode: str, body: str, python: str = "/usr/bin/python3") -> str:
    """A shell command running build_torch_script(mode, body) with `python`: compressed into one
    `-c` argument (Linux caps a single argument at 128 KiB; the script is about 100 KiB), so a
    testinfra check can send it with `host.run` and no file on the board."""
    return bundle.python_c(build_torch_script(mode, body), python)


def build_program(
    mode: str, scenario: str = "healthy", boot_config: BootConfig | None = None
) -> str:
    """One Python 3 source (stdlib only) that runs the QPU smoke test in `mode`.

    `scenario` picks the fake board of emulate mode (tests use the failure scenarios);
    `boot_config` is the board's config.txt as the host read it outside the chroot (S3 quotes it).
    """
    words = _checked_words(kernels.all_kernels())
    op_words = _checked_words(opkernels.op_kernels())
    return bundle.program(
        f"netroot QPU smoke program, mode {mode!r}",
        (bundle.LOADER, *bundle.SMOKE_BASE, *bundle.qpu(module_names(mode))),
        f"KERNELS = {_literal(words)}",
        f"OP_KERNELS = {_literal(op_words)}",
        f"TORCH_MODULES = {bundle.sources(bundle.qpu(bundle.TORCH_MODULES))!r}",
        "from netroot.qpu import program as _program",
        f"BOOT_CONFIG = {(boot_config.path, boot_config.text) if boot_config else None!r}",
        f"raise SystemExit(_program.main({mode!r}, KERNELS, {scenario!r}, BOOT_CONFIG, "
        "(OP_KERNELS, TORCH_MODULES)))",
    )
