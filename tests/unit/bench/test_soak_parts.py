"""The fault soak's parts that need no lab: the deck of faults, the moments they wait for, the
export root read where it lives (here: a directory of the test's), the event log followed as
it grows, and the run's row for bench/README.md."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from bench.soak_report import HEADER, by_kind, readme_row
from bench.soakfaults import KINDS, MOMENTS, OPS_FOR, START, Faults
from bench.soaklab import IMAGE_NAME, SoakLab
from netroot.lab.plan import make_plan
from netroot.remote.fleet import EVENTS_NAME, STATE_NAME
from netroot.remote.lock import LOCK_NAME


def _lab(tmp_path: Path) -> SoakLab:
    plan = make_plan(2, tmp_path / "lab", tmp_path / "export")
    (tmp_path / "export").mkdir(exist_ok=True)
    return SoakLab(plan, dict(os.environ))


def test_every_kind_is_dealt_in_the_first_round_and_a_missed_one_comes_back(
    tmp_path: Path,
) -> None:
    faults = Faults(_lab(tmp_path), random.Random(3))
    first = [faults.deal() for _ in KINDS]
    assert sorted(k for k in first if k) == sorted(KINDS)  # no quiet operation in round one
    again = Faults(_lab(tmp_path), random.Random(3))
    assert [again.deal() for _ in KINDS] == first  # the seed fixes the order
    # Round two has two quiet operations among the kinds.
    second = [faults.deal() for _ in range(len(KINDS) + 2)]
    assert second.count(None) == 2 and sorted(k for k in second if k) == sorted(KINDS)
    # A fault that did not fire is dealt again next, with why it did not counted.
    chosen = faults.choose("nfs-kill", "rollout", faults.lab.boards[0])
    faults.not_fire(chosen, "rollout ended (exit 0, 20 s) before switching")
    assert faults.deal() == "nfs-kill"
    assert faults.not_fired == ["nfs-kill: rollout ended (exit 0, 20 s) before switching"]


def test_unavailable_kinds_are_never_dealt(tmp_path: Path) -> None:
    faults = Faults(_lab(tmp_path), random.Random(1), unavailable={"disk-full"})
    assert "disk-full" not in [faults.deal() for _ in range(40)]


def test_each_fault_waits_for_a_moment_its_operation_has() -> None:
    rng = random.Random(0)
    faults = Faults(SoakLab(make_plan(2, Path("/nonexistent")), {}), rng)
    board = faults.lab.boards[0]
    for kind in (*KINDS, None):
        for op in OPS_FOR[kind]:
            for _ in range(10):
                chosen = faults.choose(kind, op, board)
                assert chosen.moment in MOMENTS.get(kind or "", {}).get(op, ("start",))
                low, high = START[op]
                assert low <= chosen.delay <= high
    # The NFS server's faults in a rollout wait for a board's switch (its remount), never a delay.
    assert {faults.choose("nfs-restart", "rollout", board).moment for _ in range(20)} == {
        "switching"
    }
    # A board's faults only come with an operation that touches boards.
    assert "export" not in OPS_FOR["power-off"] and "export" in OPS_FOR["kill-9"]


def test_the_export_root_read_where_it_lives(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    root = lab.home.export_root
    versions = root / IMAGE_NAME / "versions"
    (versions / "aaaa").mkdir(parents=True)
    (versions / "aaaa.json").write_text("{}")
    (versions / "bbbb").mkdir()  # a version with no manifest
    (root / IMAGE_NAME / "current").symlink_to("versions/aaaa")
    (root / STATE_NAME).write_text('{"boards": {}}')
    snap = lab.snapshot(lab.home)
    assert snap["current"] == "aaaa"
    assert sorted(snap["versions"]) == ["aaaa", "bbbb"] and snap["manifests"] == ["aaaa"]
    assert snap["state"] == '{"boards": {}}' and snap["lock"] is None
    assert snap["name_lock"] is None and snap["fs_bytes"] > 0
    assert lab.current() == {lab.home.name: "aaaa"}
    # The writer's lock of a live process, and an export name's flock held: both reported.
    (root / LOCK_NAME).write_text(json.dumps({"pid": os.getpid(), "command": "netroot x"}))
    name_lock = root / IMAGE_NAME / ".lock"
    name_lock.write_text("netroot export (pid 1)")
    take = (  # another process holds it, as netroot would
        f"import fcntl, os, time; fd = os.open({str(name_lock)!r}, os.O_RDONLY); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(30)"
    )
    holder = subprocess.Popen([sys.executable, "-c", take], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        held = lab.held_locks({lab.home.name: lab.snapshot(lab.home)})
    finally:
        holder.kill()
        holder.wait()
    assert len(held) == 2 and "netroot x" in held[0] and "pid 1" in held[1]
    # A holder whose process is gone is not a lock held: the next writer takes it over.
    (root / LOCK_NAME).write_text(json.dumps({"pid": 2**22 + 1, "command": "netroot x"}))
    assert lab.held_locks({lab.home.name: lab.snapshot(lab.home)}) == []


def test_the_event_log_followed_as_it_grows(tmp_path: Path) -> None:
    lab = _lab(tmp_path)
    log = lab.home.export_root / EVENTS_NAME
    old = {"time": time.time() - 100, "board": "pi-01", "event": "switching"}
    log.write_text(json.dumps(old) + "\n")
    events = lab.follow()
    try:
        assert not events.reached("pi-01", "switching")  # what was there before does not count
        with log.open("a") as fh:
            fh.write(json.dumps({"time": time.time(), "board": "pi-02", "event": "switching"}))
            fh.write("\n")
        for _ in range(100):
            if events.reached("pi-02", "switching"):
                break
            time.sleep(0.05)
        assert events.reached("pi-02", "switching") and not events.reached("pi-02", "smoking")
    finally:
        events.stop()
    assert events.proc.returncode is not None


def test_the_row_for_the_readme() -> None:
    result = {
        "seed": 5, "commit": "abc1234", "minutes": 6.0, "seconds": 390, "boards": 2,
        "server": "ganesha", "operations": {"rollout": 3, "export": 1},
        "faults": {"nfs-kill": 1, "power-cut": 2}, "faults_chosen": {"nfs-kill": 2, "power-cut": 2},
        "faults_not_fired": {"nfs-kill": 1},
        "not_fired_why": ["nfs-kill: rollout ended (exit 3, 12 s) before switching"],
        "checks": 5, "violations": [], "notes": ["disk-full left out: / is shared"],
    }  # fmt: skip
    text = readme_row(result)
    lines = text.splitlines()
    assert "\n".join(lines[:2]) == HEADER
    assert lines[2] == (
        "| 5 (abc1234) | ganesha, 2 | 6 (6.5) | rollout 3, export 1 | power-cut 2, nfs-kill 1 "
        "| 4, 1 not fired (nfs-kill: switching) | 5 | 0 |"
    )
    assert lines[3] == "notes: disk-full left out: / is shared"
    assert by_kind({}) == "none"
    red = readme_row({**result, "violations": ["op #2 (rollout): no-lock-held: x"]})
    assert "| 1: op #2 (rollout): no-lock-held: x |" in red
