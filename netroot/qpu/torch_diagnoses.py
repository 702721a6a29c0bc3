"""What S12-S14 say when their child process (netroot.qpu.torch_smoke) ends early: each known
cause by name (SIGILL, the OOM killer, another signal, an exit code, a time limit), with the
board's memory where memory is the suspect. Stdlib-only (bundled).
"""

from __future__ import annotations

import signal

from netroot.qpu import forked
from netroot.qpu.smoke import Stage, _stage

NO_TORCH_RC = 10
SIGILL_DIAGNOSIS = (
    "killed by SIGILL at `import torch`: this torch build uses instructions a Pi 3B's "
    "Cortex-A53 (ARMv8.0) lacks, such as the ARMv8.1 LSE atomics of several aarch64 wheels "
    "(pytorch #132032, #174344)"
)
SIGILL_REMEDY = (
    "use Debian's python3-torch (bookworm, arm64) in the image, or a wheel built for armv8-a"
)
OOM_REMEDY = (
    "lower gpu_mem in the board's config.txt (128 leaves 896 MiB), stop other services, or add swap"
)
NO_TORCH = "no torch in this image (python3 cannot import torch)"


def memory_facts(gpu_mem: int) -> str:
    """The board's memory as the kernel sees it, and the GPU's share, for OOM diagnoses."""
    fields = {}
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields[key] = value.split()[0] if value.split() else ""
    except OSError as exc:
        return f"/proc/meminfo unreadable ({exc})"
    mib = {k: int(fields[k]) // 1024 for k in ("MemTotal", "MemAvailable") if k in fields}
    gpu = f"gpu_mem {gpu_mem >> 20} MiB" if gpu_mem else "gpu_mem unknown (S3 did not read it)"
    return (
        f"MemTotal {mib.get('MemTotal', '?')} MiB, MemAvailable {mib.get('MemAvailable', '?')} "
        f"MiB, {gpu} (a 3B has 1024 MiB less gpu_mem)"
    )


def s12_failed(ending: forked.Ending, timeout_s: float, gpu_mem: int) -> Stage:
    """S12 for a child that ended before its import did: each known cause by name."""
    if ending.timed_out:
        return _stage(
            "S12",
            "fail",
            f"`import torch` did not finish within {timeout_s:.0f} s",
            f"import torch hung or crawled ({memory_facts(gpu_mem)})",
            "check the board's NFS root and memory; retry once the page cache is warm",
        )
    rc, last = ending.returncode, ending.last_line
    if rc == NO_TORCH_RC:
        return _stage("S12", "skip", NO_TORCH)
    if rc == -signal.SIGILL:
        return _stage(
            "S12",
            "fail",
            "`import torch` (the smoke's torch child) killed by SIGILL",
            SIGILL_DIAGNOSIS,
            SIGILL_REMEDY,
        )
    if rc == -signal.SIGKILL or "MemoryError" in last:
        how = "killed by SIGKILL (the OOM killer)" if rc < 0 else last
        return _stage(
            "S12",
            "fail",
            f"`import torch` (the smoke's torch child): {how}",
            f"out of memory importing torch: {memory_facts(gpu_mem)}",
            OOM_REMEDY,
        )
    if rc < 0:
        name = _signal_name(-rc)
        return _stage(
            "S12",
            "fail",
            f"`import torch` (the smoke's torch child) killed by {name}",
            f"torch crashed at import ({name})",
            "rebuild or replace the image's torch",
        )
    return _stage(
        "S12",
        "fail",
        f"`import torch` (the smoke's torch child) exited {rc}: {last}",
        "torch is installed but does not import",
        "fix the image's torch",
    )


def died_after_import(sid: str, ending: forked.Ending, timeout_s: float, gpu_mem: int) -> Stage:
    """The stage `sid` for a child that ended during it, after torch had imported."""
    # The child died holding the QPUs (enabled, GPU memory allocated through the mailbox), and
    # nothing here says the firmware takes them back from a dead process.
    reboot = "reboot the board if a later smoke cannot allocate GPU memory (the child held it)"
    if ending.timed_out:
        return _stage(
            sid,
            "fail",
            f"S13 and S14 did not finish within {timeout_s:.0f} s of `import torch`: "
            f"the child process was killed in {sid}",
            f"{sid} hung: a QPU execute that never returned, or torch crawling",
            f"{reboot}; `netroot smoke BOARD --qpu require` diagnoses the QPU",
        )
    rc, last = ending.returncode, ending.last_line
    died = f"the child process that imported torch died in {sid}"
    if rc == -signal.SIGILL:
        return _stage(
            sid,
            "fail",
            f"{died}: killed by SIGILL",
            "torch or netroot's operators ran an instruction a Pi 3B's Cortex-A53 (ARMv8.0) "
            "lacks, after `import torch` passed",
            SIGILL_REMEDY,
        )
    if rc == -signal.SIGKILL or "MemoryError" in last:
        how = "killed by SIGKILL (the OOM killer)" if rc < 0 else last
        return _stage(
            sid, "fail", f"{died}: {how}", f"out of memory in {sid}: {memory_facts(gpu_mem)}",
            f"{OOM_REMEDY}; {reboot}",
        )  # fmt: skip
    how = f"killed by {_signal_name(-rc)}" if rc < 0 else f"exited {rc}: {last}"
    return _stage(
        sid,
        "fail",
        f"{died}: {how}",
        f"{sid} crashed the process after `import torch` passed",
        f"{reboot}; report this as a bug, with S12's torch version",
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
