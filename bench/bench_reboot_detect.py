"""How long the board role's reboot task takes to notice a board is back, and why (not a test).

    flock /tmp/netroot-lab.lock python -m bench.bench_reboot_detect --rounds 20 \
        [--hog 2 --hog-rounds 20] [--concurrent] [--budget SECONDS] pi-01 nb-01

On the running lab (`lab up`; a diskless board must be booted: `netroot provision` first), each
round reboots each named board with the role's own reboot action (`netroot_reboot`, the
arguments and ansible.cfg the role uses: reboot.yml / netboot.yml) in a one-task playbook run
with -vvv (`--concurrent`: all of them at once, one playbook each), while a watcher on the
control host connects to the board's port 22 every 0.5 s and reads its SSH banner. A reboot's
timeline, all from the control host:
  down      the first second port 22 stopped answering after the reboot command
  up        the first second sshd answered with its banner again
  detected  the task's end (the action saw a new boot id)
  sent      when the action logged "rebooting server" (its boot id read, the command next)
  restart   when the board's console said "reboot: Restarting" (its shutdown done)
  probes    each "last boot time check" that failed, with its error, as Ansible logged it
detection lag = detected - up: what the waiting costs beyond the board's own boot (up - down).
And where the seconds went: the board's QEMU's CPU time and its time runnable but waiting for
a core (its threads' /proc schedstat, over the task), and per round the host's busy and
stolen cores (/proc/stat), the share of the round something waited for a core
(/proc/pressure/cpu) and the load average at its start and end.

`--rounds` idle rounds, and with `--hog N` up to `--hog-rounds` more rounds with N processes
spinning on the host's CPU (killed after the round, on Ctrl-C, and by the kernel if the bench
dies), spread among the idle ones. `--budget`: seconds the rounds may take; every idle round
comes first in it, a hogged round that would crowd one out is dropped, and no round starts
that is not expected to end in time (the reboot timeout is cut to what is left).
Prints JSON (per board and condition the median and worst of each figure, hogged over idle;
each round's load; each reboot's timeline) and the figures as markdown rows on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.hogs import Hogs, cpu_ns
from bench.reboot_load import CpuTimes, host_load, next_kind, parse_cpu, psi_some_us, summarise
from bench.reboot_load import table as markdown
from netroot import paths, threadwait
from netroot.lab import supervise

REPO = Path(__file__).resolve().parents[1]
ROLE = REPO / "playbooks" / "roles" / "netroot_board"
PLAYBOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - name: Reboot (the board role's action and arguments)
      netroot_reboot:
        reboot_command: "{{ reboot_command }}"
        boot_time_command: "{{ boot_id_command }}"
        reboot_timeout: "{{ reboot_timeout | int }}"
        connect_timeout: "{{ connect_timeout | int }}"
        probe_interval: "{{ probe_interval | float }}"
      vars:
        ansible_ssh_retries: 0
"""
PROBE = re.compile(r"last boot time check failed: (.*?)(?:; again in|, retrying in|$)")
SENT = re.compile(r": rebooting server")
RESTART = re.compile(r"reboot: Restarting")


# Console lines worth a place on the timeline (the board's side of the reboot).
MARKS = re.compile(
    r"reboot: Restarting|U-Boot 20|DHCP client bound|TFTP from|Bytes transferred|Starting kernel"
    r"|Booting Linux|Run /init|switch_root|Welcome to|Started .*[Ss]sh|login:|T T T|Retry count"
    r"|netroot|timed out|Timed out|error|Error"
)


class Watcher(threading.Thread):
    """Port 22 of one board, every 0.5 s: the times it stopped and started answering SSH; and
    its serial console's new lines (the lab's console.log), timed as they appear."""

    def __init__(self, address: str, console: Path | None) -> None:
        super().__init__(daemon=True)
        self.address, self.stop = address, threading.Event()
        self.changes: list[tuple[float, bool]] = []
        self.console = console
        self.offset = console.stat().st_size if console and console.exists() else 0
        self.lines: list[tuple[float, str]] = []

    def read_console(self) -> None:
        if self.console is None or not self.console.exists():
            return
        with self.console.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        cut = data.rfind(b"\n") + 1
        self.offset += cut
        now = time.monotonic()
        for raw in data[:cut].decode(errors="replace").splitlines():
            line = raw.strip()
            if line and MARKS.search(line):
                self.lines.append((now, line[:120]))

    def answers(self) -> bool:
        try:
            with socket.create_connection((self.address, 22), timeout=1) as s:
                s.settimeout(5)  # sshd's banner, forked on a busy emulated board
                return s.recv(16).startswith(b"SSH-")
        except OSError:
            return False

    def run(self) -> None:
        last: bool | None = None
        while not self.stop.is_set():
            now = self.answers()
            if now != last:
                self.changes.append((time.monotonic(), now))
                last = now
            self.read_console()
            time.sleep(0.5)


@dataclass
class Lab:
    """What every reboot of the run needs: the lab's inventory and addresses, the action's
    arguments, and the ansible-playbook processes running (ended on Ctrl-C)."""

    inventory: Path
    hosts: dict[str, str]
    extra: dict[str, Any]
    running: set[subprocess.Popen[str]] = field(default_factory=set)

    def qemu_pid(self, board: str) -> int | None:
        return supervise.read_pidfile(paths.lab_dir() / "boards" / board / "qemu.pid")


def one_reboot(lab: Lab, board: str, timeout: int) -> dict[str, Any]:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "playbooks" / "ansible.cfg"),
        "ANSIBLE_ACTION_PLUGINS": str(ROLE / "action_plugins"),
        "ANSIBLE_FORCE_COLOR": "0",
    }
    console = paths.lab_dir() / "boards" / board / "console.log"
    pid = lab.qemu_pid(board)
    watcher = Watcher(lab.hosts[board], console)
    watcher.start()
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as book:
        book.write(PLAYBOOK)
        book.flush()
        playbook = str(Path(sys.executable).parent / "ansible-playbook")
        extra = {**lab.extra, "reboot_timeout": timeout}
        argv = [playbook, "-i", str(lab.inventory), "-l", board, "-vvv", book.name,
                "-e", json.dumps(extra)]  # fmt: skip
        qemu0 = cpu_ns(pid) if pid else (0, 0)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=REPO / "playbooks",
        )  # fmt: skip
        lab.running.add(proc)
        probes, sent = [], None
        assert proc.stdout is not None
        for line in proc.stdout:
            found = PROBE.search(line)
            if found:
                probes.append((round(time.monotonic() - t0, 1), found.group(1).strip()[-120:]))
            elif sent is None and SENT.search(line):
                sent = round(time.monotonic() - t0, 1)
        proc.wait()
        end = time.monotonic()
        lab.running.discard(proc)
        qemu1 = cpu_ns(pid) if pid else (0, 0)
    watcher.stop.set()
    watcher.join()
    rel = [(round(t - t0, 1), up) for t, up in watcher.changes]
    down = next((t for t, up in rel if not up), None)
    back = next((t for t, up in rel if up and down is not None and t > down), None)
    detected = round(end - t0, 1)
    console_lines = [(round(t - t0, 1), line) for t, line in watcher.lines]
    return {
        "board": board, "rc": proc.returncode, "sent": sent, "down": down,
        "restart": next((t for t, line in console_lines if RESTART.search(line)), None),
        "up": back, "detected": detected,
        "boot_s": None if down is None or back is None else round(back - down, 1),
        "lag_s": None if back is None else round(detected - back, 1),
        "qemu_cpu_s": round((qemu1[0] - qemu0[0]) / 1e9, 1) if pid else None,
        "qemu_wait_s": round((qemu1[1] - qemu0[1]) / 1e9, 1) if pid else None,
        "probes": probes, "console": console_lines,
    }  # fmt: skip


def _cpu() -> CpuTimes:
    return parse_cpu(Path("/proc/stat").read_text())


def _psi() -> int:
    try:
        return psi_some_us(Path("/proc/pressure/cpu").read_text())
    except OSError:  # a kernel without PSI: the share reads 0
        return 0


def one_round(
    lab: Lab, boards: list[str], hogs: int, together: bool, timeout: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Reboot every board (at once if `together`) with `hogs` spinning meanwhile: the round's
    host load, and each board's reboot."""
    cpu0, psi0, load0, t0 = _cpu(), _psi(), os.getloadavg()[0], time.monotonic()
    pool = ThreadPoolExecutor(max_workers=len(boards) if together else 1)
    try:
        with Hogs(hogs) as hog:
            futures = [pool.submit(one_reboot, lab, board, timeout) for board in boards]
            reboots = threadwait.results(futures)
            hog_cpu = hog.cpu_s()
    except BaseException:
        for proc in list(lab.running):
            proc.terminate()
        raise
    finally:
        pool.shutdown(wait=True)
    wall = time.monotonic() - t0
    load = host_load(cpu0, _cpu(), psi0, _psi(), wall, os.cpu_count() or 1)
    host = {"hogs": hogs, "wall_s": round(wall, 1), **load, "load1_start": round(load0, 2),
            "load1_end": round(os.getloadavg()[0], 2), "hog_cpu_s": round(hog_cpu, 1)}  # fmt: skip
    for r in reboots:
        r.update(hog=hogs, busy_cores=load["busy_cores"], cpu_wait_share=load["cpu_wait_share"])
    return host, reboots


def _lab(probe_interval: float | None) -> Lab:
    inventory = paths.lab_inventory()
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    extra = {
        "reboot_command": defaults["netroot_board_reboot_command"],
        "boot_id_command": defaults["netroot_board_boot_id_command"],
        "reboot_timeout": defaults["netroot_board_reboot_timeout"],
        "connect_timeout": defaults["netroot_board_reboot_connect_timeout"],
        "probe_interval": probe_interval or defaults["netroot_board_reboot_probe_interval"],
    }
    inv = yaml.safe_load(inventory.read_text())
    hosts: dict[str, str] = {}

    def walk(group: dict[str, Any]) -> None:
        for name, hv in (group.get("hosts") or {}).items():
            hosts[name] = str((hv or {}).get("ansible_host", name))
        for child in (group.get("children") or {}).values():
            walk(child or {})

    walk(inv["all"])
    return Lab(inventory, hosts, extra)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("boards", nargs="+")
    parser.add_argument("--rounds", type=int, default=5, help="idle rounds")
    parser.add_argument("--hog", type=int, default=0, help="busy processes in a hogged round")
    parser.add_argument("--hog-rounds", type=int, default=None, help="default: --rounds")
    parser.add_argument("--concurrent", action="store_true", help="a round's boards at once")
    parser.add_argument("--budget", type=float, default=None, help="seconds for all rounds")
    parser.add_argument("--guess", type=float, default=80.0, help="an idle round's seconds")
    parser.add_argument("--probe-interval", type=float, default=None)
    args = parser.parse_args()
    lab = _lab(args.probe_interval)
    unknown = [b for b in args.boards if b not in lab.hosts]
    if unknown:
        sys.exit(f"not in the lab's inventory: {', '.join(unknown)} ({lab.inventory})")
    idle_left = args.rounds
    hog_left = (args.rounds if args.hog_rounds is None else args.hog_rounds) if args.hog else 0
    budget = args.budget if args.budget is not None else 1e9
    walls: dict[int, list[float]] = {0: [], args.hog: []}
    rounds: list[dict[str, Any]] = []
    reboots: list[dict[str, Any]] = []
    since_hog, interrupted, t_start = 0, False, time.monotonic()
    try:
        while True:
            left = budget - (time.monotonic() - t_start)
            idle_s = statistics.median(walls[0]) if walls[0] else args.guess
            hog_s = (
                statistics.median(walls[args.hog])
                if args.hog and walls[args.hog]
                else idle_s * (1 + args.hog / (os.cpu_count() or 1))
            )
            kind = next_kind(idle_left, hog_left, since_hog, left, idle_s, hog_s)
            if kind is None:
                break
            hogs = args.hog if kind == "hog" else 0
            timeout = int(min(lab.extra["reboot_timeout"], max(left, 60)))
            host, mine = one_round(lab, args.boards, hogs, args.concurrent, timeout)
            host["round"] = len(rounds) + 1
            rounds.append(host)
            walls[hogs].append(host["wall_s"])
            for r in mine:
                r["round"] = host["round"]
                short = {k: v for k, v in r.items() if k not in ("probes", "console")}
                print(f"[bench] round {host['round']}: {short}", file=sys.stderr, flush=True)
            print(f"[bench] round {host['round']} host: {host}", file=sys.stderr, flush=True)
            reboots += mine
            idle_left, hog_left = idle_left - (hogs == 0), hog_left - (hogs != 0)
            since_hog = 0 if hogs else since_hog + 1
            if any(r["rc"] != 0 for r in mine):
                print("[bench] a reboot failed: no more rounds", file=sys.stderr, flush=True)
                break
    except KeyboardInterrupt:
        interrupted = True
    summary = summarise(reboots)
    settings = {**lab.extra, "boards": args.boards, "concurrent": args.concurrent,
                "hog": args.hog, "cores": os.cpu_count(), "interrupted": interrupted,
                "dropped": {"idle": idle_left, "hog": hog_left}}  # fmt: skip
    print(markdown(summary), file=sys.stderr, flush=True)
    print(json.dumps({"settings": settings, "summary": summary, "rounds": rounds,
                      "reboots": reboots}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
