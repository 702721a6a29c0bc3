"""The fault soak's faults: which one comes next, the moment it waits for inside the running
command, how it is injected and how it is healed (bench/soak.py drives them; not a test).

A fault fires from what the command is doing, never at a time that could outlive it: a board
reaching `switching` or `smoking` in the fleet's event log (followed as netroot appends to it),
a board that stopped answering during a provision's reboot, or a short delay after the start
(a second or a few: every operation takes longer than its start delay, though a no-op rollout
may not). When the command ends before the moment comes, the fault is "not fired", with the
reason, and its kind is dealt again next: the faults come from a deck (every kind once, in the
seed's order, then again with two quiet operations per round), so a short run meets them all.
"""

from __future__ import annotations

import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from bench.soaklab import EventFollower, SoakLab
from netroot.lab.host.boards import BoardFiles
from netroot.lab.host.monitor import hmp
from netroot.lab.plan import NETNS, BoardPlan

KINDS = ("power-cut", "power-off", "nfs-restart", "nfs-kill", "netem", "kill-9", "disk-full",
         "two-controllers")  # fmt: skip
BOARD_OPS = ("rollout", "rollout", "rollback", "provision")  # rollouts twice as often
ALL_OPS = (*BOARD_OPS, "export")
# The operations a fault is paired with (a board's faults need an operation that touches boards).
OPS_FOR = {"power-cut": BOARD_OPS, "power-off": BOARD_OPS, "nfs-restart": BOARD_OPS,
           "nfs-kill": BOARD_OPS, "netem": BOARD_OPS, "kill-9": ALL_OPS,
           "disk-full": ALL_OPS, "two-controllers": ALL_OPS, None: ALL_OPS}  # fmt: skip
# The moments a fault may wait for, by operation ("start": a delay from START; the others are
# events of the chosen board, or "rebooting": its port 22 closed during a provision).
MOMENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "power-cut": {"rollout": ("switching", "smoking", "start"), "rollback": ("switching", "start"),
                  "provision": ("rebooting", "start")},
    "power-off": {"rollout": ("switching", "smoking", "start"), "rollback": ("switching", "start"),
                  "provision": ("rebooting", "start")},
    "nfs-restart": {"rollout": ("switching",), "rollback": ("switching", "start"),
                    "provision": ("rebooting", "start")},
    "nfs-kill": {"rollout": ("switching",), "rollback": ("switching", "start"),
                 "provision": ("rebooting", "start")},
    "netem": {"rollout": ("start", "switching")},
    "kill-9": {"rollout": ("switching", "smoking", "start")},
}  # fmt: skip
# Seconds after a command's start for the moment "start": shorter than any such command takes
# on the lab (an export of a warm image 2-10 s, a provision 15-60, a rollback 30-60).
START = {"rollout": (0.5, 6.0), "rollback": (0.5, 6.0), "provision": (1.0, 8.0),
         "export": (0.3, 1.5)}  # fmt: skip
LINK_HEAL = ["set_link lan on", "object_del soakdelay"]
SMALL_FS = 17 << 30  # disk-full only on an export root this small and of its own
BALLAST = ".soak-ballast"
# Fills a filesystem as root (argv: the export root): what is free, reserved blocks included,
# allocated in one file, the last 32 MiB written until ENOSPC (allocation needs metadata too).
FILL = (
    'r=$1; free=$(( $(stat -f -c %f "$r") * $(stat -f -c %S "$r") - 33554432 )); '
    f'[ $free -gt 0 ] && fallocate -l $free "$r/{BALLAST}.0"; '
    f'dd if=/dev/zero of="$r/{BALLAST}.1" bs=1M 2>/dev/null; true'
)


def say(msg: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Chosen:
    """One operation's fault: its kind, the board it concerns, the moment it waits for."""

    kind: str | None
    board: BoardPlan
    moment: str = "start"
    delay: float = 0.0
    fired: bool = False
    why_not: str = ""  # why it was not fired
    seed: float = 0.0  # its own randomness (a bad link's flaps), drawn whether it fires or not


@dataclass
class Faults:
    """The run's faults: dealt, injected from a thread, healed when the command has ended."""

    lab: SoakLab
    rng: random.Random
    fired: Counter[str] = field(default_factory=Counter)
    chosen: Counter[str] = field(default_factory=Counter)
    not_fired: list[str] = field(default_factory=list)  # "kind: why"
    heals: list[tuple[str, list[str] | None]] = field(default_factory=list)
    powered: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    flapping: threading.Event = field(default_factory=threading.Event)
    unavailable: set[str] = field(default_factory=set)
    deck: list[str | None] = field(default_factory=list)
    rounds: int = 0
    second: subprocess.Popen[str] | None = None  # the second control host's netroot
    running: subprocess.Popen[str] | None = None  # the operation's netroot
    hung: int = 0  # operations killed after soak.HUNG seconds

    def stop(self) -> None:
        """The soak stopped (a signal): netroot's runs killed, with their children, and the
        faults healed, so that the lab is left as a fault would not."""
        for proc in (self.running, self.second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # each runs in a session of its own
        self.heal()

    def deal(self) -> str | None:
        """The next fault kind: each kind once per round in the seed's order, quiet operations
        only from the second round on."""
        if not self.deck:
            kinds: list[str | None] = [k for k in KINDS if k not in self.unavailable]
            if self.rounds:
                kinds += [None, None]
            self.rng.shuffle(kinds)
            self.deck, self.rounds = kinds, self.rounds + 1
        return self.deck.pop(0)

    def choose(self, kind: str | None, op: str, board: BoardPlan) -> Chosen:
        moment = self.rng.choice(MOMENTS.get(kind or "", {}).get(op, ("start",)))
        return Chosen(kind, board, moment, self.rng.uniform(*START[op]), seed=self.rng.random())

    def not_fire(self, chosen: Chosen, why: str) -> None:
        assert chosen.kind is not None
        chosen.why_not = why
        self.not_fired.append(f"{chosen.kind}: {why}")
        self.deck.insert(0, chosen.kind)  # dealt again next: a short run still meets it
        say(f"  fault {chosen.kind} not fired: {why}")

    def wait(self, chosen: Chosen, proc: subprocess.Popen[str], events: EventFollower) -> bool:
        """Wait for the fault's moment while the command runs; False when it ended first."""
        deadline = time.monotonic() + chosen.delay
        name = chosen.board.name
        while proc.poll() is None:
            if chosen.moment in ("switching", "smoking"):
                if events.reached(name, chosen.moment):
                    return True
            elif chosen.moment == "rebooting":
                try:
                    socket.create_connection((chosen.board.address, 22), timeout=1).close()
                except OSError:
                    return True
            elif time.monotonic() >= deadline:
                return True
            time.sleep(0.2)
        return False

    def _bad_link(self, board: BoardPlan, seed: float) -> None:
        """Delay and loss on the board's link. This host's kernel has no netem (nor tc
        classifiers or actions): the delay is QEMU's filter-buffer on the board's netdev
        (packets both ways held and released every 100-300 ms) plus tbf's queue on its tap
        (10 Mbit/s: latency under load); the loss is the link cut for 0.5-2 s every 8-20 s.
        (At 2 Mbit/s and cuts of 1-3 s every 4-10 s, a board reading its root over NFS took
        246 s to fail its switch: one rollout ate a short run.)"""
        own = random.Random(seed)
        interval = own.choice((100_000, 200_000, 300_000))
        mon = BoardFiles(board.dir(self.lab.plan.lab_dir)).monitor_socket
        hmp(mon, [f"object_add filter-buffer,id=soakdelay,netdev=lan,interval={interval}"])
        tbf = ["ip", "netns", "exec", NETNS, "tc", "qdisc"]
        self.heals.append(("link", [board.name]))
        subprocess.run([*tbf, "replace", "dev", board.tap, "root", "tbf", "rate", "10mbit",
                        "burst", "64kbit", "latency", "400ms"], check=True)  # fmt: skip
        self.heals.append(("argv", [*tbf, "del", "dev", board.tap, "root"]))
        self.flapping.clear()

        def flap() -> None:
            while not self.flapping.wait(own.uniform(8, 20)):
                hmp(mon, ["set_link lan off"])
                self.flapping.wait(own.uniform(0.5, 2))
                hmp(mon, ["set_link lan on"])

        threading.Thread(target=flap, daemon=True).start()

    def inject(self, chosen: Chosen, proc: subprocess.Popen[str], second: list[str]) -> str:
        """Inject the fault; what it did (for the log). `second` is the second control host's
        argv (two-controllers)."""
        lab, srv, board = self.lab, self.lab.plan.nfs[0], chosen.board
        kernel = lab.plan.server == "kernel"
        kind = chosen.kind
        mon = BoardFiles(board.dir(lab.plan.lab_dir)).monitor_socket
        if kind == "power-cut":
            hmp(mon, ["system_reset"])  # the power cut and back on at once
        elif kind == "power-off":
            hmp(mon, ["stop"])  # off (no answer at all) until healed
            self.powered[board.name] = False
            self.heals.append(("power-on", None))
        elif kind == "nfs-restart":
            lab.server_sh(srv, "systemctl restart nfs-server" if kernel
                          else "/usr/local/sbin/netroot-ganesha restart")  # fmt: skip
        elif kind == "nfs-kill":
            self.heals.append(("nfs-start", None))
            lab.server_sh(srv, "rpc.nfsd 0" if kernel
                          else "kill -9 $(cat /run/netroot-ganesha.pid)")  # fmt: skip
        elif kind == "netem":
            self._bad_link(board, chosen.seed)
        elif kind == "kill-9":
            os.kill(proc.pid, signal.SIGKILL)
        elif kind == "disk-full":
            self.heals.append(("disk", None))
            lab.run_on(srv, ["sh", "-c", FILL, "fill", str(srv.export_root)])
        elif kind == "two-controllers":
            self.second = lab.netroot(*second)
            return f"second control host: netroot {' '.join(second)}"
        return f"on {board.name}" if kind not in ("disk-full", "kill-9") else ""

    def heal(self) -> tuple[int | None, str]:
        """Every fault undone, every board answering SSH again; the second control host's exit
        code and the end of its stderr (None: there was none)."""
        lab, srv = self.lab, self.lab.plan.nfs[0]
        self.flapping.set()
        for what, argv in reversed(self.heals):
            try:
                if what == "link" and argv:
                    board = next(b for b in lab.boards if b.name == argv[0])
                    hmp(BoardFiles(board.dir(lab.plan.lab_dir)).monitor_socket, LINK_HEAL)
                elif what == "power-on":
                    for b in lab.boards:
                        if not self.powered.get(b.name, True):
                            hmp(BoardFiles(b.dir(lab.plan.lab_dir)).monitor_socket,
                                ["system_reset", "cont"])  # fmt: skip
                            self.powered[b.name] = True
                elif what == "nfs-start":
                    kernel = lab.plan.server == "kernel"
                    lab.server_sh(srv, "systemctl restart nfs-server" if kernel
                                  else "/usr/local/sbin/netroot-ganesha start")  # fmt: skip
                elif what == "disk":
                    root = shlex.quote(str(srv.export_root))
                    lab.run_on(srv, ["sh", "-c", f"rm -f {root}/{BALLAST}.0 {root}/{BALLAST}.1"])
                elif argv is not None:
                    subprocess.run(argv, check=False, capture_output=True)
            except (OSError, subprocess.SubprocessError) as e:  # the soak's tool, not netroot
                self.notes.append(f"heal {what} failed: {e}")
        self.heals.clear()
        rc, err = None, ""
        if self.second is not None:
            _, err = self.second.communicate()
            rc, self.second = self.second.returncode, None
        # Every board answers SSH again (back from a power cut or a reboot), at most 5 min.
        deadline = time.monotonic() + 300
        for b in lab.boards:
            while lab.ssh(b.address, "true", timeout=20) != 0 and time.monotonic() < deadline:
                time.sleep(3)
        return rc, err

    def disk_full_possible(self) -> str:
        """Empty when the export root is a small filesystem of its own; else why not."""
        srv = self.lab.plan.nfs[0]
        snap = self.lab.snapshot(srv)
        size = int(snap["fs_bytes"])
        if not snap["own_fs"]:
            return f"{srv.export_root} is on the machine's root filesystem"
        if size > SMALL_FS:
            return f"{srv.export_root} is {size >> 30} GiB, more than a soak's own filesystem"
        return ""
