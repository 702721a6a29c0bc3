"""The fault soak: a seeded random run of netroot's operations on the lab under injected faults,
the invariants checked after every operation (not a test; issue 38).

    flock /tmp/netroot-lab.lock bash -c 'python -m netroot lab up --boards 2 &&
        python -m bench.soak --seed 7 --minutes 10; python -m netroot lab down'
    python -m bench.soak --replay      # every seed of bench/soak_seeds.txt, its own minutes

Until `--minutes` have passed: deal a fault kind (bench/soakfaults.py: every kind once per
round, in the seed's order), pick an operation it fits (rollout, rollback, provision, export)
and a board, start the operation and inject the fault at a moment of what the operation is
doing (a board reaching `switching` or `smoking` in the event log, a board gone quiet in a
provision's reboot, a second or a few after the start), heal every fault once the command has
ended (power back on, the NFS server started, the link mended, the disk freed, every board
answering SSH again), run the command again when it failed (and the second control host's, when
it failed other than refused), then read the lab and check the invariants
(bench/soak_check.py). A fault whose moment never came is counted "not fired", with why. A
violation stops the soak, printing the seed, the operation's number and the violation; the
run's figures go to stdout as JSON and its row for bench/README.md's table to stderr.

The seed fixes the choices (faults, operations, boards, moments), not the lab's timing: a rerun
of a seed replays the same sequence as long as the same faults fire (a fault not fired is dealt
again next), and where a fault lands inside an operation can differ.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.soak_check import INVARIANTS, Step, check, refused
from bench.soak_report import commit, readme_row
from bench.soakfaults import OPS_FOR, Chosen, Faults, say
from bench.soaklab import IMAGE_NAME, SoakLab
from netroot.lab.plan import make_plan

BASE_IMAGE = "netroot-lab/raspbian:bookworm"
VARIANTS = 3
SEEDS = Path(__file__).with_name("soak_seeds.txt")
HUNG = 600  # seconds: an operation still running then is killed (a hang is noted, not waited for)
RESET_CONFIG = (  # as bench_reboot: config.txt as Bookworm ships it, so provision reboots
    "sudo -n sed -i -e '/^# BEGIN netroot qpu boot config$/,/^# END netroot qpu boot config$/d'"
    " -e 's/^#netroot-qpu: //' /boot/firmware/config.txt"
)


def variant(i: int) -> str:
    """The lab image plus a stamp, tagged soak-i (built locally, never pulled)."""
    ref = f"netroot-lab/raspbian:soak-{i}"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nCOPY stamp /etc/netroot-stamp\n")
        Path(tmp, "stamp").write_text(f"soak {i}\n")
        argv = ["docker", "build", "--pull=false", "--platform", "linux/arm/v7", "-q", "-t", ref,
                tmp]  # fmt: skip
        subprocess.run(argv, check=True, capture_output=True)
    return ref


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


def last_line(err: str) -> str:
    return err.strip().splitlines()[-1] if err.strip() else ""


def rerun(lab: SoakLab, argv: list[str], who: str) -> int:
    again = lab.netroot(*argv)
    _, err = again.communicate()
    if again.returncode != 0:
        say(f"  {who} rerun exit {again.returncode}: {err.strip()[-600:]}")
    return again.returncode


def draw(
    faults: Faults, last: list[str]
) -> tuple[str | None, str, Chosen, list[str], list[str], bool]:
    """The next operation's choices, all from the seed: its fault, operation, the fault's board
    and moment, its argv, the second control host's argv, whether a provision reboots."""
    rng = faults.rng
    kind = faults.deal()
    op = rng.choice(OPS_FOR[kind])
    chosen = faults.choose(kind, op, rng.choice(faults.lab.boards))
    argv = command(op, rng, last[0])
    if op == "rollout":
        last[0] = argv[1]
    second = command(rng.choice(OPS_FOR[None]), rng, last[0])
    reboot = op == "provision" and (chosen.moment == "rebooting" or rng.random() < 0.3)
    return kind, op, chosen, argv, second, reboot


def preview(seed: int, count: int, lab: SoakLab, unavailable: set[str]) -> list[str]:
    """The first `count` operations a seed deals when every fault fires (`--preview`)."""
    faults, last = Faults(lab, random.Random(seed), unavailable=unavailable), [""]
    lines = []
    for n in range(1, count + 1):
        kind, op, chosen, _, _, _ = draw(faults, last)
        lines.append(f"#{n} {op}: {kind or 'none'} ({chosen.moment}, {chosen.board.name})")
    return lines


def one_op(lab: SoakLab, n: int, faults: Faults, last: list[str]) -> tuple[Step, dict[str, Any]]:
    """Operation n under its fault: the Step to check and the line of the run's log."""
    kind, op, chosen, argv, second, reboot = draw(faults, last)
    if reboot:
        lab.ssh(chosen.board.address, RESET_CONFIG)  # this provision reboots the board
    when = chosen.moment if chosen.moment != "start" else f"{chosen.delay:.1f} s in"
    say(f"#{n} netroot {' '.join(argv)}; fault {kind or 'none'} ({when}, {chosen.board.name})")
    if kind is not None:
        faults.chosen[kind] += 1
    before = lab.current()
    events = lab.follow()
    t0 = time.monotonic()
    proc = faults.running = lab.netroot(*argv)
    did: list[str] = []

    def fault() -> None:
        if kind is None:
            return
        if not faults.wait(chosen, proc, events):
            faults.not_fire(chosen, f"{op} ended (exit {proc.returncode}, "
                            f"{time.monotonic() - t0:.0f} s) before {when}")  # fmt: skip
            return
        try:
            did.append(faults.inject(chosen, proc, second))
        except (OSError, subprocess.SubprocessError) as e:  # the soak's tool, not netroot
            faults.not_fire(chosen, f"could not be injected: {e}")
            return
        chosen.fired = True
        faults.fired[kind] += 1
        say(f"  fault {kind} fired {time.monotonic() - t0:.0f} s in {did[0]}")

    thread = threading.Thread(target=fault)
    thread.start()
    try:
        _, err = proc.communicate(timeout=HUNG)
    except subprocess.TimeoutExpired:  # killed like kill -9, and run again: noted, counted
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        faults.notes.append(f"#{n}: netroot {' '.join(argv)} ran {HUNG} s under {kind}: killed")
        faults.hung += 1
        say(f"  still running after {HUNG} s: killed")
    thread.join()
    events.stop()
    second_rc, second_err = faults.heal()
    rc = proc.returncode
    seconds = time.monotonic() - t0
    mid = lab.current()
    rerun_rc = None
    # A rollback with no earlier good version recorded is refused (exit 2): nothing to redo.
    nothing = op == "rollback" and rc == 2 and "no earlier good version" in err
    if rc != 0 and not nothing:
        say(f"  exit {rc}: {last_line(err)}; running it again")
        rerun_rc = rerun(lab, argv, "its")
    after = lab.current()
    second_rerun_rc = None
    if second_rc is not None and not refused(second[0], second_rc):
        say(f"  the second control host's exit {second_rc}: {last_line(second_err)}; again")
        second_rerun_rc = rerun(lab, second, "the second control host's")
    line = {"n": n, "op": op, "fault": kind, "moment": when, "board": chosen.board.name,
            "fired": chosen.fired, "why_not": chosen.why_not, "rc": rc, "rerun_rc": rerun_rc,
            "seconds": round(seconds)}  # fmt: skip
    if kind == "two-controllers" and chosen.fired:
        line.update(second=second[0], second_rc=second_rc, second_rerun_rc=second_rerun_rc)
    step = Step(op, rc, interrupted=rc != 0 and not nothing, rerun_rc=rerun_rc,
                current_before=before, current_mid=mid, current_after=after,
                second_op=second[0] if second_rc is not None else "", second_rc=second_rc,
                second_rerun_rc=second_rerun_rc,
                current_end=lab.current() if second_rerun_rc is not None else after)  # fmt: skip
    return step, line


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def soak(seed: int, minutes: float) -> dict[str, object]:
    rng = random.Random(seed)
    at = commit()  # the code that runs (read now: the tree may move on while the soak runs)
    lab = SoakLab.running()
    say(f"seed {seed}, {minutes} min, {len(lab.boards)} boards, {lab.plan.server} servers")
    for i in range(VARIANTS):
        variant(i)
    faults = Faults(lab, rng)
    why = faults.disk_full_possible()
    if why:
        faults.unavailable.add("disk-full")
        faults.notes.append(f"disk-full left out: {why}")
        say(f"disk-full left out: {why}")
    ops: Counter[str] = Counter()
    log: list[dict[str, Any]] = []
    # The start: the image exported (a soak's own export root starts empty), every board
    # provisioned (a lab just up has none mounted) and checked.
    first = [["provision", "--all"]]
    if lab.current()[lab.home.name] is None:
        first.insert(0, ["export", BASE_IMAGE, "--name", IMAGE_NAME])
    for argv in first:
        say(f"start: netroot {' '.join(argv)}")
        start = lab.netroot(*argv)
        _, err = start.communicate()
        if start.returncode != 0:
            sys.exit(f"the soak's start failed: netroot {' '.join(argv)} exit "
                     f"{start.returncode}:\n{err[-1500:]}")  # fmt: skip
    violations = [f"at the start: {v}" for v in check(lab.seen(faults.powered))]
    checks = 1
    end = time.monotonic() + minutes * 60
    n = 0
    t0 = time.monotonic()
    last = [""]
    stopped = False
    signal.signal(signal.SIGTERM, interrupted)  # `timeout`, `kill`: stop as Ctrl-C does
    try:
        while time.monotonic() < end and not violations:
            n += 1
            step, line = one_op(lab, n, faults, last)
            log.append(line)
            ops[step.op] += 1
            found = check(lab.seen(faults.powered), step)
            checks += 1
            violations = [f"op #{n} ({step.op}): {v}" for v in found]
    except KeyboardInterrupt:
        stopped = True
        say(f"stopped during op #{n}: its netroot killed, the faults healed, no last check")
        faults.notes.append(f"stopped by a signal during op #{n} (not counted, not checked)")
        faults.stop()
    if not violations and not stopped:  # the end: once more, after a quiet minute
        time.sleep(min(60.0, max(0.0, end - time.monotonic())))
        violations = [f"at the end: {v}" for v in check(lab.seen(faults.powered))]
        checks += 1
    for v in violations:
        say(f"VIOLATION (seed {seed}) {v}")
    not_fired = Counter(entry.split(":", 1)[0] for entry in faults.not_fired)
    return {
        "seed": seed, "commit": at, "minutes": minutes,
        "seconds": round(time.monotonic() - t0), "boards": len(lab.boards),
        "server": lab.plan.server, "operations": dict(ops), "faults": dict(faults.fired),
        "faults_chosen": dict(faults.chosen), "faults_not_fired": dict(not_fired),
        "not_fired_why": faults.not_fired, "checks": checks, "invariants": list(INVARIANTS),
        "violations": violations, "hung": faults.hung, "notes": faults.notes, "log": log,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--replay", action="store_true", help=f"every seed of {SEEDS.name}")
    parser.add_argument(
        "--preview",
        type=int,
        default=0,
        metavar="N",
        help="print the seed's first N operations and faults, run nothing",
    )
    parser.add_argument("--without", default="", help="with --preview: kinds left out (a,b)")
    args = parser.parse_args()
    if args.preview:
        plan = make_plan(2, Path("/nonexistent"))
        unavailable = {k for k in args.without.split(",") if k}
        print("\n".join(preview(args.seed or 0, args.preview, SoakLab(plan, {}), unavailable)))
        return
    if args.replay:
        runs = []
        for line in SEEDS.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                fields = line.split()
                runs.append(soak(int(fields[0]), float(fields[1])))
        print(json.dumps(runs, indent=2))
        for r in runs:
            say(readme_row(r))
        sys.exit(1 if any(r["violations"] for r in runs) else 0)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    result = soak(seed, args.minutes)
    print(json.dumps(result, indent=2))
    say("the row for bench/README.md's table:\n" + readme_row(result))
    sys.exit(1 if result["violations"] else 0)


if __name__ == "__main__":
    main()
