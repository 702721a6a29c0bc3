"""How long the board role's reboot task takes to notice a board is back, and why (not a test).

    flock /tmp/netroot-lab.lock python -m bench.bench_reboot_detect --rounds 5 pi-01 nb-01

On the running lab (`lab up`; a diskless board must be booted: `netroot provision` first), each
round reboots each named board with the role's own reboot action (`netroot_reboot`, the
arguments and ansible.cfg the role uses: reboot.yml / netboot.yml) in a one-task playbook run
with -vvv, while a watcher on the control host connects to the board's port 22 every 0.5 s and
reads its SSH banner. A round's timeline, all from the control host:
  down      the first second port 22 stopped answering after the reboot command
  up        the first second sshd answered with its banner again
  detected  the task's end (the action saw a new boot id)
  probes    each "last boot time check" that failed, with its error, as Ansible logged it
detection lag = detected - up: what the waiting costs beyond the board's own boot (up - down).
Prints JSON (each round's timeline; per board the median and worst boot and lag).
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
from pathlib import Path
from typing import Any

import yaml

from netroot import paths

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
                s.settimeout(2)
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


def one_reboot(
    inventory: Path, board: str, address: str, extra: dict[str, Any], console: Path | None
) -> dict[str, Any]:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "playbooks" / "ansible.cfg"),
        "ANSIBLE_ACTION_PLUGINS": str(ROLE / "action_plugins"),
        "ANSIBLE_FORCE_COLOR": "0",
    }
    watcher = Watcher(address, console)
    watcher.start()
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as book:
        book.write(PLAYBOOK)
        book.flush()
        playbook = str(Path(sys.executable).parent / "ansible-playbook")
        argv = [playbook, "-i", str(inventory), "-l", board, "-vvv", book.name,
                "-e", json.dumps(extra)]  # fmt: skip
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            cwd=REPO / "playbooks",
        )  # fmt: skip
        probes = []
        assert proc.stdout is not None
        for line in proc.stdout:
            found = PROBE.search(line)
            if found:
                probes.append((round(time.monotonic() - t0, 1), found.group(1).strip()[-120:]))
        proc.wait()
        end = time.monotonic()
    watcher.stop.set()
    watcher.join()
    rel = [(round(t - t0, 1), up) for t, up in watcher.changes]
    down = next((t for t, up in rel if not up), None)
    back = next((t for t, up in rel if up and down is not None and t > down), None)
    detected = round(end - t0, 1)
    return {
        "board": board, "rc": proc.returncode, "down": down, "up": back, "detected": detected,
        "boot_s": None if down is None or back is None else round(back - down, 1),
        "lag_s": None if back is None else round(detected - back, 1),
        "probes": probes,
        "console": [(round(t - t0, 1), line) for t, line in watcher.lines],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("boards", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--probe-interval", type=float, default=None)
    args = parser.parse_args()
    inventory = paths.lab_inventory()
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    extra = {
        "reboot_command": defaults["netroot_board_reboot_command"],
        "boot_id_command": defaults["netroot_board_boot_id_command"],
        "reboot_timeout": defaults["netroot_board_reboot_timeout"],
        "connect_timeout": defaults["netroot_board_reboot_connect_timeout"],
        "probe_interval": args.probe_interval or defaults["netroot_board_reboot_probe_interval"],
    }
    inv = yaml.safe_load(inventory.read_text())
    hosts: dict[str, str] = {}

    def walk(group: dict[str, Any]) -> None:
        for name, hv in (group.get("hosts") or {}).items():
            hosts[name] = str((hv or {}).get("ansible_host", name))
        for child in (group.get("children") or {}).values():
            walk(child or {})

    walk(inv["all"])
    rounds = []
    for i in range(args.rounds):
        for board in args.boards:
            console = paths.lab_dir() / "boards" / board / "console.log"
            r = one_reboot(inventory, board, hosts[board], extra, console)
            short = {k: v for k, v in r.items() if k not in ("probes", "console")}
            print(f"[bench] round {i + 1}: {short}", file=sys.stderr, flush=True)
            rounds.append(r)
    summary = {}
    for board in args.boards:
        mine = [r for r in rounds if r["board"] == board and r["lag_s"] is not None]
        if mine:
            lags, boots = [r["lag_s"] for r in mine], [r["boot_s"] for r in mine]
            summary[board] = {
                "reboots": len(mine), "lag_median": statistics.median(lags), "lag_worst": max(lags),
                "boot_median": statistics.median(boots), "boot_worst": max(boots),
                "detected_median": statistics.median(r["detected"] for r in mine),
                "detected_worst": max(r["detected"] for r in mine),
            }  # fmt: skip
    print(json.dumps({"settings": extra, "summary": summary, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
