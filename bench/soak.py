"""The fault soak: a seeded random run of netroot's operations on the lab under injected faults,
the invariants checked after every operation (not a test; issue 38).

    flock /tmp/netroot-lab.lock bash -c 'python -m netroot lab up --boards 2 &&
        python -m bench.soak --seed 7 --minutes 10; python -m netroot lab down'
    python -m bench.soak --replay      # every seed of bench/soak_seeds.txt, its own minutes

Until `--minutes` have passed: pick an operation (rollout, rollback, provision, export) and a
fault (or none) with `random.Random(seed)`, start the operation, inject the fault at a moment
chosen from the seed or from what the operation is doing (a board entering `switching` or
`smoking` in the event log, a board that stopped answering during a provision's reboot), heal
every fault once the command has ended (power back on, the NFS server started, netem removed,
the disk freed, every board answering SSH again), run the command again when it failed, then
read the lab and check the invariants (bench/soak_check.py). A violation stops the soak, printing
the seed, the operation's number and the violation; the run's figures go to stdout as JSON.

The seed fixes the choices (operations, faults, boards, delays), not the lab's timing: a rerun
of a seed replays the same sequence, and where a fault lands inside an operation can differ.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.soak_check import INVARIANTS, Step, check
from bench.soaklab import IMAGE_NAME, SoakLab
from netroot.lab.host.boards import BoardFiles
from netroot.lab.host.monitor import hmp
from netroot.lab.plan import NETNS, BoardPlan

BASE_IMAGE = "netroot-lab/raspbian:bookworm"
VARIANTS = 3
SEEDS = Path(__file__).with_name("soak_seeds.txt")
OPS = ("rollout", "rollout", "rollback", "provision", "export")  # rollouts twice as often
FAULTS = ("power-cut", "power-off", "nfs-restart", "nfs-kill", "netem", "kill-9", "disk-full",
          "two-controllers", None)  # fmt: skip
LINK_HEAL = ["set_link lan on", "object_del soakdelay"]
SMALL_FS = 16 << 30  # disk-full only on an export root this small (a soak's own filesystem)
# Seconds into each operation a fault may land (they take, on 2 lab boards: a rollout 40-150 s,
# a rollback 30-60, a provision 15-60, an export 2-10): a fault chosen for a moment after the
# command ended is not injected (faults_chosen counts it, faults does not).
DELAYS = {"rollout": (1.0, 45.0), "rollback": (1.0, 30.0), "provision": (1.0, 15.0),
          "export": (0.5, 5.0)}  # fmt: skip
RESET_CONFIG = (  # as bench_reboot: config.txt as Bookworm ships it, so provision reboots
    "sudo -n sed -i -e '/^# BEGIN netroot qpu boot config$/,/^# END netroot qpu boot config$/d'"
    " -e 's/^#netroot-qpu: //' /boot/firmware/config.txt"
)


def say(msg: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def variant(i: int) -> str:
    """The lab image plus a stamp, tagged soak-i (built locally, never pulled)."""
    ref = f"netroot-lab/raspbian:soak-{i}"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nCOPY stamp /etc/netroot-stamp\n")
        Path(tmp, "stamp").write_text(f"soak {i}\n")
        argv = [
            "docker",
            "build",
            "--pull=false",
            "--platform",
            "linux/arm/v7",
            "-q",
            "-t",
            ref,
            tmp,
        ]
        subprocess.run(argv, check=True, capture_output=True)
    return ref


@dataclass
class Faults:
    """The faults of one operation: injected from a thread, healed when the command has ended."""

    lab: SoakLab
    rng: random.Random
    fired: Counter[str] = field(default_factory=Counter)
    heals: list[tuple[str, list[str] | None]] = field(default_factory=list)
    powered: dict[str, bool] = field(default_factory=dict)
    second: subprocess.Popen[str] | None = None
    notes: list[str] = field(default_factory=list)
    flapping: threading.Event = field(default_factory=threading.Event)
    chosen: Counter[str] = field(default_factory=Counter)
    unavailable: set[str] = field(default_factory=set)
    last_image: str = ""

    def monitor(self, board: BoardPlan) -> Path:
        return BoardFiles(board.dir(self.lab.plan.lab_dir)).monitor_socket

    def _bad_link(self, board: BoardPlan) -> None:
        """Delay and loss on the board's link. This host's kernel has no netem (nor tc
        classifiers or actions): the delay is QEMU's filter-buffer on the board's netdev
        (packets both ways held and released every 100-300 ms) plus tbf's queue on its tap
        (2 Mbit/s: latency under load); the loss is the link cut for 1-3 s every 4-10 s."""
        own = random.Random(self.rng.random())  # the flaps' timing never shifts the seed's choices
        interval = own.choice((100_000, 200_000, 300_000))
        hmp(
            self.monitor(board),
            [f"object_add filter-buffer,id=soakdelay,netdev=lan,interval={interval}"],
        )
        tbf = ["ip", "netns", "exec", NETNS, "tc", "qdisc"]
        subprocess.run([*tbf, "replace", "dev", board.tap, "root", "tbf", "rate", "2mbit",
                        "burst", "32kbit", "latency", "400ms"], check=True)  # fmt: skip
        self.heals.append(("netem", [*tbf, "del", "dev", board.tap, "root"]))
        self.heals.append(("link", [board.name]))
        self.flapping.clear()

        def flap() -> None:
            while not self.flapping.wait(own.uniform(4, 10)):
                hmp(self.monitor(board), ["set_link lan off"])
                self.flapping.wait(own.uniform(1, 3))
                hmp(self.monitor(board), ["set_link lan on"])

        threading.Thread(target=flap, daemon=True).start()

    def inject(self, kind: str, board: BoardPlan, proc: subprocess.Popen[str], op: str) -> None:
        lab, srv = self.lab, self.lab.plan.nfs[0]
        ganesha = lab.plan.server != "kernel"
        if kind in ("power-cut", "power-off"):
            monitor = BoardFiles(board.dir(lab.plan.lab_dir)).monitor_socket
            if kind == "power-cut":
                hmp(monitor, ["system_reset"])  # the power cut and back on at once
            else:
                hmp(monitor, ["stop"])  # off (no answer at all) until healed
                self.powered[board.name] = False
                self.heals.append(("power-on", None))
        elif kind == "nfs-restart":
            lab.server_sh(srv, "/usr/local/sbin/netroot-ganesha restart" if ganesha
                          else "systemctl restart nfs-server")  # fmt: skip
        elif kind == "nfs-kill":
            lab.server_sh(srv, "kill -9 $(cat /run/netroot-ganesha.pid)" if ganesha
                          else "rpc.nfsd 0")  # fmt: skip
            self.heals.append(("nfs-start", None))
        elif kind == "netem":
            self._bad_link(board)
        elif kind == "kill-9":
            os.kill(proc.pid, signal.SIGKILL)
        elif kind == "disk-full":
            root = srv.export_root
            stat = os.statvfs(root)
            if stat.f_blocks * stat.f_frsize > SMALL_FS:
                self.notes.append(f"disk-full skipped: {root} is not a small soak filesystem")
                return
            ballast = root / ".soak-ballast"
            subprocess.run(
                ["fallocate", "-l", str(stat.f_bavail * stat.f_frsize), ballast], check=False
            )
            self.heals.append(("disk", ["rm", "-f", str(ballast)]))
        elif kind == "two-controllers":
            other = self.rng.choice(OPS)
            self.second = lab.netroot(*command(other, self.rng))
        self.fired[kind] += 1
        say(f"  fault {kind} on {board.name} while {op} runs")

    def heal(self) -> None:
        lab, srv = self.lab, self.lab.plan.nfs[0]
        self.flapping.set()
        for what, argv in self.heals:
            if what == "link":
                hmp(self.monitor(board_named(lab, argv[0] if argv else "")), LINK_HEAL)
            elif what == "power-on":
                for b in lab.boards:
                    if not self.powered.get(b.name, True):
                        hmp(
                            BoardFiles(b.dir(lab.plan.lab_dir)).monitor_socket,
                            ["system_reset", "cont"],
                        )
                        self.powered[b.name] = True
            elif what == "nfs-start":
                kernel = lab.plan.server == "kernel"
                start = "systemctl restart nfs-server" if kernel else "netroot-ganesha start"
                lab.server_sh(srv, start if kernel else f"/usr/local/sbin/{start}")
            elif argv is not None:
                subprocess.run(argv, check=False, capture_output=True)
        self.heals.clear()
        if self.second is not None:
            self.second.communicate()
            self.notes.append(f"second controller exited {self.second.returncode}")
            self.second = None
        # Every board answers SSH again (back from a power cut or a reboot), at most 5 min.
        deadline = time.monotonic() + 300
        for b in lab.boards:
            while lab.ssh(b.address, "true", timeout=20) != 0 and time.monotonic() < deadline:
                time.sleep(3)


def board_named(lab: SoakLab, name: str) -> BoardPlan:
    return next(b for b in lab.boards if b.name == name)


def command(op: str, rng: random.Random, last: str = "") -> list[str]:
    """The operation's argv; a rollout's image is never the last one rolled out (a no-op)."""
    images = [f"netroot-lab/raspbian:soak-{i}" for i in range(VARIANTS)]
    image = rng.choice([i for i in images if i != last])
    if op == "rollout":
        return ["rollout", image, "--name", IMAGE_NAME, "-y", "--batch", "1", "--qpu", "skip"]
    if op == "rollback":
        return ["rollback", "boards", "-y"]
    if op == "export":
        return ["export", image, "--name", IMAGE_NAME]
    return ["provision", "--all"]


def _wait_moment(lab: SoakLab, moment: str, board: BoardPlan, proc: subprocess.Popen[str],
                 delay: float, since: int) -> bool:  # fmt: skip
    """Wait for the fault's moment while the command runs; False when it ended first."""
    deadline = time.monotonic() + delay
    while proc.poll() is None:
        if moment in ("switching", "smoking"):
            with lab.events_file().open() as fh:
                fh.seek(since)
                if any(
                    f'"board": "{board.name}"' in ln and f'"event": "{moment}"' in ln for ln in fh
                ):
                    return True
        elif moment == "rebooting":
            try:
                socket.create_connection((board.address, 22), timeout=1).close()
            except OSError:
                return True
        elif time.monotonic() >= deadline:
            return True
        time.sleep(0.5)
    return False


def one_op(lab: SoakLab, rng: random.Random, n: int, faults: Faults) -> Step:
    op = rng.choice(OPS)
    kind = rng.choice([f for f in FAULTS if f not in faults.unavailable])
    board = rng.choice(lab.boards)
    moment = "any"
    if kind in ("power-cut", "power-off"):
        moments = {"rollout": ("switching", "smoking", "any"), "provision": ("rebooting", "any")}
        moment = rng.choice(moments.get(op, ("any",)))
    delay = rng.uniform(*DELAYS[op])
    argv = command(op, rng, faults.last_image)
    if op == "rollout":
        faults.last_image = argv[1]
    if op == "provision" and (moment == "rebooting" or rng.random() < 0.3):
        lab.ssh(board.address, RESET_CONFIG)  # this provision reboots the board
    if kind is not None:
        faults.chosen[kind] += 1
    say(f"#{n} {' '.join(argv)}; fault {kind or 'none'} ({moment}, {delay:.0f} s) on {board.name}")
    before = lab.current()
    since = lab.events_file().stat().st_size if lab.events_file().exists() else 0
    proc = lab.netroot(*argv)
    hit = threading.Event()

    def fault() -> None:
        if kind is not None and _wait_moment(lab, moment, board, proc, delay, since):
            try:
                faults.inject(kind, board, proc, op)
            except (OSError, subprocess.CalledProcessError) as e:  # the soak's tool, not netroot
                faults.notes.append(f"#{n}: fault {kind} could not be injected: {e}")
                say(f"  fault {kind} could not be injected: {e}")
                return
            hit.set()

    thread = threading.Thread(target=fault)
    thread.start()
    _, err = proc.communicate()
    thread.join()
    faults.heal()
    rc = proc.returncode
    mid = lab.current()
    rerun_rc = None
    # A rollback with no earlier good version recorded is refused (exit 2): nothing to redo.
    nothing = op == "rollback" and rc == 2 and "no earlier good version" in err
    if rc != 0 and not nothing:
        say(f"  exit {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}; running it again")
        again = lab.netroot(*argv)
        _, err2 = again.communicate()
        rerun_rc = again.returncode
        if rerun_rc != 0:
            say(f"  rerun exit {rerun_rc}: {err2.strip()[-600:]}")
    return Step(op, rc, interrupted=rc != 0, rerun_rc=rerun_rc, current_before=before,
                current_mid=mid, current_after=lab.current())  # fmt: skip


def soak(seed: int, minutes: float) -> dict[str, object]:
    rng = random.Random(seed)
    lab = SoakLab.running()
    say(f"seed {seed}, {minutes} min, {len(lab.boards)} boards, {lab.plan.server} servers")
    for i in range(VARIANTS):
        variant(i)
    faults = Faults(lab, rng)
    home = lab.home.export_root
    if os.statvfs(home).f_blocks * os.statvfs(home).f_frsize > SMALL_FS:
        faults.unavailable.add("disk-full")
        faults.notes.append(f"disk-full not injected: {home} is not a small soak filesystem")
    ops: Counter[str] = Counter()
    # The start: every board provisioned (a lab just up has none mounted) and checked.
    say("start: netroot provision --all")
    start = lab.netroot("provision", "--all")
    _, err = start.communicate()
    if start.returncode != 0:
        sys.exit(f"the soak's first provision failed (exit {start.returncode}):\n{err[-1500:]}")
    violations = [f"at the start: {v}" for v in check(lab.seen(faults.powered))]
    checks = 1
    end = time.monotonic() + minutes * 60
    n = 0
    t0 = time.monotonic()
    while time.monotonic() < end and not violations:
        n += 1
        step = one_op(lab, rng, n, faults)
        ops[step.op] += 1
        found = check(lab.seen(faults.powered), step)
        checks += 1
        violations = [f"op #{n} ({step.op}): {v}" for v in found]
    if not violations:  # the end: once more, after a quiet minute
        time.sleep(min(60.0, max(0.0, end - time.monotonic())))
        violations = [f"at the end: {v}" for v in check(lab.seen(faults.powered))]
        checks += 1
    for v in violations:
        say(f"VIOLATION (seed {seed}) {v}")
    return {
        "seed": seed, "minutes": minutes, "seconds": round(time.monotonic() - t0),
        "boards": len(lab.boards), "server": lab.plan.server, "operations": dict(ops),
        "faults": dict(faults.fired), "faults_chosen": dict(faults.chosen), "checks": checks,
        "invariants": list(INVARIANTS),
        "violations": violations, "notes": faults.notes,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--replay", action="store_true", help=f"every seed of {SEEDS.name}")
    args = parser.parse_args()
    if args.replay:
        runs = []
        for line in SEEDS.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                fields = line.split()
                runs.append(soak(int(fields[0]), float(fields[1])))
        print(json.dumps(runs, indent=2))
        sys.exit(1 if any(r["violations"] for r in runs) else 0)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    result = soak(seed, args.minutes)
    print(json.dumps(result, indent=2))
    sys.exit(1 if result["violations"] else 0)


if __name__ == "__main__":
    main()
