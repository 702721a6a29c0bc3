"""The pure parts of `bench.bench_reboot_detect` (not a test): the host's load read from /proc
text, the order of idle and hogged rounds within a time budget, and the figures per board.

A reboot's wall time on an emulated board is CPU time of its QEMU plus time that QEMU waited on
a run queue for a core plus time the guest was idle (network, timers). The kernel counts the
first two per thread (/proc/PID/task/TID/schedstat: run ns, wait ns, slices), so a round can
show where its seconds went instead of guessing it from the load average.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

IDLE = "idle"


@dataclass(frozen=True)
class CpuTimes:
    """/proc/stat's first line, summed over all cores, in clock ticks."""

    busy: int  # user, nice, system, irq, softirq (guest time is inside user)
    idle: int  # idle and iowait
    steal: int  # taken by the hypervisor for other guests: this machine is a VM
    total: int


def parse_cpu(proc_stat: str) -> CpuTimes:
    """The `cpu` line of /proc/stat (missing trailing fields count as 0)."""
    line = proc_stat.split("\n", 1)[0].split()
    if not line or line[0] != "cpu":
        raise ValueError(f"not /proc/stat: {proc_stat[:40]!r}")
    user, nice, system, idle, iowait, irq, softirq, steal = ([int(f) for f in line[1:9]] + [0] * 8)[
        :8
    ]
    busy = user + nice + system + irq + softirq
    return CpuTimes(busy, idle + iowait, steal, busy + idle + iowait + steal)


def psi_some_us(pressure: str) -> int:
    """/proc/pressure/cpu's `some ... total=US`: microseconds in which at least one runnable
    task waited for a core."""
    for line in pressure.splitlines():
        if line.startswith("some "):
            return int(line.rsplit("total=", 1)[1])
    raise ValueError(f"no 'some' line in {pressure[:60]!r}")


def schedstat_ns(text: str) -> tuple[int, int]:
    """One thread's /proc/.../schedstat: (ns on a core, ns runnable but waiting for one)."""
    run_ns, wait_ns, _slices = text.split()
    return int(run_ns), int(wait_ns)


def host_load(
    cpu0: CpuTimes, cpu1: CpuTimes, psi0: int, psi1: int, wall_s: float, cores: int
) -> dict[str, float]:
    """The host during one round: cores busy and stolen on average, and the share of the
    round in which something runnable waited for a core (PSI cpu some)."""
    ticks = max(cpu1.total - cpu0.total, 1)
    return {
        "busy_cores": round((cpu1.busy - cpu0.busy) / ticks * cores, 2),
        "steal_cores": round((cpu1.steal - cpu0.steal) / ticks * cores, 2),
        "cpu_wait_share": round((psi1 - psi0) / 1e6 / wall_s, 2) if wall_s > 0 else 0.0,
    }


def next_kind(
    idle_left: int, hog_left: int, since_hog: int, left_s: float, idle_s: float, hog_s: float
) -> str | None:
    """The next round's kind ("idle", "hog") or None to stop: every idle round asked for comes
    first in the budget; the hogged rounds that fit beside them are spread evenly among them
    (the idle rounds from the last hogged one to the end cut into hogs + 1 runs), the rest
    dropped. `since_hog`: idle rounds since the last hogged one; `idle_s`, `hog_s`: a round's
    expected seconds of each kind; `left_s`: the seconds left in the budget."""
    fit = int((left_s - idle_left * idle_s) // hog_s) if hog_s > 0 else 0
    hogs = max(0, min(hog_left, fit))
    if hogs and since_hog >= (since_hog + idle_left) / (hogs + 1):
        return "hog"
    if idle_left and left_s >= idle_s:
        return IDLE
    return None


def condition(hogs: int) -> str:
    return IDLE if hogs == 0 else f"hog {hogs}"


METRICS = {  # figure: what of a reboot's record it is
    "task_s": "detected",
    "sent_s": "sent",
    "shutdown_s": "down",
    "boot_s": "boot_s",
    "lag_s": "lag_s",
    "qemu_cpu_s": "qemu_cpu_s",
    "qemu_wait_s": "qemu_wait_s",
    "host_busy_cores": "busy_cores",
    "host_cpu_wait_share": "cpu_wait_share",
}


def summarise(reboots: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per board and condition ("idle", "hog N"): reboots, failures, and of each metric the
    median and the worst (max); per hogged condition, each median over the idle one's."""
    out: dict[str, dict[str, Any]] = {}
    for board in dict.fromkeys(r["board"] for r in reboots):
        mine = [r for r in reboots if r["board"] == board]
        per: dict[str, Any] = {}
        for cond in dict.fromkeys(condition(r["hog"]) for r in mine):
            rows = [r for r in mine if condition(r["hog"]) == cond]
            good = [r for r in rows if r["rc"] == 0 and r["lag_s"] is not None]
            figures: dict[str, Any] = {"reboots": len(good), "failed": len(rows) - len(good)}
            for name, key in METRICS.items():
                values = [r[key] for r in good if r.get(key) is not None]
                if values:
                    figures[name] = {
                        "median": round(statistics.median(values), 2),
                        "worst": round(max(values), 2),
                    }
            per[cond] = figures
        base = per.get(IDLE, {})
        for cond, figures in per.items():
            if cond == IDLE:
                continue
            figures["over_idle"] = {
                name: round(figures[name]["median"] / base[name]["median"], 2)
                for name in METRICS
                if name in figures and name in base and base[name]["median"]
            }
        out[board] = per
    return out


def table(summary: dict[str, dict[str, Any]]) -> str:
    """The summary as bench/README.md's markdown rows (median / worst, seconds)."""

    def cell(figures: dict[str, Any], name: str) -> str:
        f = figures.get(name)
        return f"{f['median']:g} / {f['worst']:g}" if f else "-"

    lines = [
        "| board | rounds | reboots (failed) | task | start to the reboot command "
        "| shutdown: start to port 22 closed "
        "| boot: closed to banner | detection lag: banner to task end | board CPU | board "
        "waiting for a core | host cores busy |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for board, per in summary.items():
        for cond, figures in per.items():
            cells = [cell(figures, name) for name in METRICS if name != "host_cpu_wait_share"]
            lines.append(
                f"| {board} | {cond} | {figures['reboots']} ({figures['failed']}) | "
                + " | ".join(cells)
                + " |"
            )
    return "\n".join(lines)
