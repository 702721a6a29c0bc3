"""bench.bench_reboot_detect's parts that need no lab: the host's load read from /proc text, the
order of idle and hogged rounds in a budget, the figures per board, and the hog processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.hogs import Hogs, cpu_ns
from bench.reboot_load import (
    CpuTimes,
    host_load,
    next_kind,
    parse_cpu,
    psi_some_us,
    schedstat_ns,
    summarise,
    table,
)

STAT = "cpu  11108 0 5243 50896 435 0 75 6 0 0\ncpu0 5000 0 2600 25000 200 0 40 3 0 0\n"
PSI = "some avg10=24.92 avg60=8.60 avg300=3.20 total=15903245\nfull avg10=0.00 total=0\n"


def test_proc_stat_is_read_as_busy_idle_and_stolen_ticks() -> None:
    cpu = parse_cpu(STAT)
    assert cpu == CpuTimes(busy=11108 + 5243 + 75, idle=50896 + 435, steal=6, total=67763)
    assert parse_cpu("cpu 1 2 3 4\n") == CpuTimes(busy=6, idle=4, steal=0, total=10)
    with pytest.raises(ValueError, match="not /proc/stat"):
        parse_cpu("intr 1 2 3")


def test_the_real_proc_files_parse() -> None:
    cpu = parse_cpu(Path("/proc/stat").read_text())
    assert cpu.total >= cpu.busy + cpu.idle > 0
    run, wait = schedstat_ns(Path("/proc/self/schedstat").read_text())
    assert run > 0 and wait >= 0
    if Path("/proc/pressure/cpu").exists():
        assert psi_some_us(Path("/proc/pressure/cpu").read_text()) >= 0


def test_pressure_and_schedstat() -> None:
    assert psi_some_us(PSI) == 15903245
    with pytest.raises(ValueError):
        psi_some_us("full avg10=0.00 total=0")
    assert schedstat_ns("78456 66073 1\n") == (78456, 66073)


def test_a_rounds_load_in_cores_and_its_share_of_waiting() -> None:
    before = CpuTimes(busy=1000, idle=1000, steal=0, total=2000)
    after = CpuTimes(busy=1750, idle=1200, steal=50, total=3000)  # 1000 ticks on 2 cores
    load = host_load(before, after, 10_000_000, 40_000_000, wall_s=60.0, cores=2)
    assert load == {"busy_cores": 1.5, "steal_cores": 0.1, "cpu_wait_share": 0.5}


def _simulate(idle: int, hog: int, budget: float, idle_s: float, hog_s: float) -> tuple[str, float]:
    """Rounds as next_kind orders them when each kind takes exactly its expected time."""
    kinds, used, since = "", 0.0, 0
    while kind := next_kind(idle, hog, since, budget - used, idle_s, hog_s):
        kinds += "H" if kind == "hog" else "I"
        used += hog_s if kind == "hog" else idle_s
        idle, hog = idle - (kind != "hog"), hog - (kind == "hog")
        since = 0 if kind == "hog" else since + 1
    return kinds, used


def test_every_idle_round_first_and_the_hogged_ones_that_fit_spread_among_them() -> None:
    kinds, used = _simulate(20, 20, 2000, 75, 150)
    assert kinds == "IIIIIHIIIIIHIIIIIHIIIII"  # 3 of the 20 hogged rounds fit
    assert used <= 2000
    assert _simulate(20, 20, 2000, 75, 300)[0] == "I" * 10 + "H" + "I" * 10  # one fits
    # Enough time: all of both, in turns.
    assert _simulate(4, 4, 10_000, 75, 150) == ("IHIHIHIH", 900)
    assert _simulate(20, 5, 10_000, 75, 150)[0] == "IIIIHIIIIHIIIHIIIHIIIHIII"
    # Not even the idle rounds fit: as many as fit, no hogged one.
    assert _simulate(20, 5, 500, 75, 150) == ("IIIIII", 450)
    # No hog asked for: idle rounds only.
    assert _simulate(3, 0, 10_000, 75, 150)[0] == "III"


def _reboot(board: str, hog: int, detected: float, boot: float, **more: Any) -> dict[str, Any]:
    return {"board": board, "hog": hog, "rc": 0, "detected": detected, "sent": 12.0, "down": 15.0,
            "boot_s": boot, "lag_s": 5.0, "qemu_cpu_s": 30.0, "qemu_wait_s": 2.0,
            "busy_cores": 1.0, "cpu_wait_share": 0.1, **more}  # fmt: skip


def test_figures_per_board_and_condition_with_hogged_over_idle() -> None:
    reboots = [
        _reboot("nb-01", 0, 60.0, 40.0),
        _reboot("nb-01", 0, 70.0, 44.0),
        _reboot("nb-01", 0, 80.0, 48.0),
        _reboot("nb-01", 2, 130.0, 88.0, qemu_wait_s=40.0, busy_cores=2.0),
        _reboot("nb-01", 2, 600.0, 0.0, rc=2, lag_s=None),  # not back: counted, not measured
        _reboot("pi-01", 0, 50.0, 22.0),
    ]
    summary = summarise(reboots)
    idle, hogged = summary["nb-01"]["idle"], summary["nb-01"]["hog 2"]
    assert idle["reboots"] == 3 and idle["failed"] == 0
    assert idle["task_s"] == {"median": 70.0, "worst": 80.0}
    assert idle["boot_s"] == {"median": 44.0, "worst": 48.0}
    assert hogged["reboots"] == 1 and hogged["failed"] == 1
    assert hogged["over_idle"]["task_s"] == round(130 / 70, 2)
    assert hogged["over_idle"]["boot_s"] == 2.0
    assert hogged["over_idle"]["qemu_wait_s"] == 20.0
    assert hogged["over_idle"]["qemu_cpu_s"] == 1.0
    assert "over_idle" not in idle
    assert list(summary["pi-01"]) == ["idle"]
    rows = table(summary).splitlines()
    assert len(rows) == 2 + 3
    assert rows[2].startswith("| nb-01 | idle | 3 (0) | 70 / 80 | 12 / 12 | 15 / 15 | 44 / 48 |")
    assert rows[3].startswith("| nb-01 | hog 2 | 1 (1) | 130 / 130 |")


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # killed, not yet reaped by its (dead) parent's reaper


def test_hogs_spin_while_the_block_runs_and_are_gone_after_it() -> None:
    with Hogs(1) as hogs:
        (pid,) = [p.pid for p in hogs.procs]
        while hogs.cpu_s() < 0.05:  # it spins: CPU time grows
            time.sleep(0.05)
    assert _gone(pid) and cpu_ns(pid) == (0, 0)


def test_hogs_end_on_an_exception_in_the_block() -> None:
    with pytest.raises(KeyboardInterrupt), Hogs(2) as hogs:
        pids = [p.pid for p in hogs.procs]
        raise KeyboardInterrupt
    assert all(_gone(pid) for pid in pids)


def test_hogs_die_with_a_bench_killed_by_sigkill() -> None:
    code = (
        "import sys, time\n"
        "from bench.hogs import Hogs\n"
        "with Hogs(1) as h:\n"
        "    print(h.procs[0].pid, flush=True)\n"
        "    time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    bench = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    assert bench.stdout is not None
    hog = int(bench.stdout.readline())
    os.kill(bench.pid, signal.SIGKILL)
    bench.wait()
    for _ in range(200):  # the kernel's SIGKILL to the orphan is immediate; allow a slow host
        if _gone(hog):
            break
        time.sleep(0.05)
    assert _gone(hog)
