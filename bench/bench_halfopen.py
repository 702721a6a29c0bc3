"""A board's NFS connection left half-open, and how long its next version switch takes (not a
test; issue 38's bad link, made deterministic).

    flock /tmp/netroot-lab.lock python -m bench.bench_halfopen --timeo 600,100 --rounds 2

What the fault soak's bad link did (bench/README.md, "The fault soak"): the server's side of a
board's NFS connection was gone, and nothing that said so (its FIN, the RST its kernel answers a
closed connection with) reached the board; the board's NFS client kept sending on the dead
connection, and every `mount` of the switch timed out. Here the same state is made on purpose
on the running lab (`lab up --boards N`, an SD board on a version, the Ganesha server): in the
server's network namespace every FIN and RST from port 2049 to the board is dropped
(iptables), then the NFS server is restarted (its sockets closed: FINs dropped, and later RSTs).
Then, on the board, `netroot-mount B` switches to another version of the image, timed, with its
tries; then the drop is lifted and the board switched back.

Each variant (`--timeo`: the `timeo=` of the board's NFS mounts, deciseconds, as nfs(5)) is
written into the board's installed netroot-mount (restored at the end), and the board's mounts
are made anew with it before each round (the client's connection takes its timeouts from the
first mount of the server). Prints JSON: per round, the switch's seconds, exit code and tries.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from bench.soaklab import SoakLab
from netroot.lab.host.boards import BoardFiles
from netroot.lab.host.monitor import hmp
from netroot.lab.host.ready import ssh_argv
from netroot.lab.plan import NETNS, BoardPlan, ServerPlan

MOUNT = "/usr/local/sbin/netroot-mount"
SAVED = "/run/netroot-mount.bench-halfopen"
SWITCH_LIMIT_S = 600
FAULTS = ("halfopen", "badlink", "badlink-harsh", "none")
TRY = re.compile(r"try (\d+)/(\d+): (.*)")


def sh(lab: SoakLab, board: BoardPlan, command: str, timeout: float = 120) -> tuple[int, str]:
    """Run `command` as root on the board; its exit code and stdout+stderr."""
    d = lab.plan.lab_dir
    argv = ssh_argv(
        board.address,
        d / "id_ed25519",
        d / "known_hosts",
        f"sudo -n bash -c {shlex.quote(command)}",
        user="pi",
    )
    argv[1:1] = ["-o", "ConnectTimeout=10", "-o", "BatchMode=yes"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, "timed out"
    return done.returncode, done.stdout + done.stderr


def server_netns(srv: ServerPlan, argv: list[str]) -> None:
    """Run `argv` in the Ganesha container's network namespace (from this host)."""
    pid = subprocess.run(
        ["docker", "inspect", "-f", "{{.State.Pid}}", srv.container],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    subprocess.run(["nsenter", "-t", pid, "-n", *argv], check=True)


def drop_rules(srv: ServerPlan, board: BoardPlan, action: str) -> None:
    """Drop (action -A) or stop dropping (-D) every FIN and RST from the server's port 2049 to
    the board: the board is never told that the server's end of its connection is gone."""
    for flag in ("FIN", "RST"):
        server_netns(
            srv,
            ["iptables", action, "OUTPUT", "-p", "tcp", "--sport", "2049", "-d", board.address,
             "--tcp-flags", flag, flag, "-j", "DROP"],
        )  # fmt: skip


@contextmanager
def bad_link(lab: SoakLab, board: BoardPlan, seed: int, harsh: bool = False) -> Iterator[None]:
    """The fault soak's bad link (bench/soakfaults.py `_bad_link`): QEMU's filter-buffer on the
    board's netdev (packets held 200 ms), tbf 10 Mbit/s on its tap, the link cut 0.5-2 s every
    8-20 s; all undone on leaving."""
    own = random.Random(seed)
    mon = BoardFiles(board.dir(lab.plan.lab_dir)).monitor_socket
    tbf = ["ip", "netns", "exec", NETNS, "tc", "qdisc"]
    hmp(mon, ["object_add filter-buffer,id=benchdelay,netdev=lan,interval=200000"])
    rate, every, cut = ("2mbit", (4, 10), (1, 3)) if harsh else ("10mbit", (8, 20), (0.5, 2))
    subprocess.run([*tbf, "replace", "dev", board.tap, "root", "tbf", "rate", rate,
                    "burst", "64kbit", "latency", "400ms"], check=True)  # fmt: skip
    stop = threading.Event()

    def flap() -> None:
        while not stop.wait(own.uniform(*every)):
            hmp(mon, ["set_link lan off"])
            stop.wait(own.uniform(*cut))
            hmp(mon, ["set_link lan on"])

    flapper = threading.Thread(target=flap, daemon=True)
    flapper.start()
    try:
        yield
    finally:
        stop.set()
        flapper.join()
        hmp(mon, ["set_link lan on", "object_del benchdelay"])
        subprocess.run([*tbf, "del", "dev", board.tap, "root"], check=False)


def versions(lab: SoakLab, name: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "netroot", "versions", name, "--json"],
        env=lab.env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    data: Any = json.loads(out)
    return [str(v["version"]) for v in data["versions"]]


@contextmanager
def half_open(lab: SoakLab, board: BoardPlan) -> Iterator[None]:
    """The server's end of the board's NFS connection gone, and the board never told: its FINs
    and RSTs to the board dropped, the NFS server restarted."""
    srv = lab.home
    drop_rules(srv, board, "-A")
    try:
        if lab.server_sh(srv, "/usr/local/sbin/netroot-ganesha restart") != 0:
            raise RuntimeError("the NFS server did not restart")
        time.sleep(5)
        yield
    finally:
        drop_rules(srv, board, "-D")


def one_round(
    lab: SoakLab, board: BoardPlan, fault: str, variant: dict[str, int], a: str, b: str, seed: int
) -> dict[str, Any]:
    rc, out = sh(lab, board, f"{MOUNT} --umount && {MOUNT} {a}", timeout=300)
    if rc != 0:
        return {**variant, "error": f"could not mount {a} anew: {out.strip()[-300:]}"}
    rc, opts = sh(lab, board, "grep ' nfs' /proc/mounts")
    conn = ""
    faults: dict[str, AbstractContextManager[None]] = {
        "halfopen": half_open(lab, board),
        "badlink": bad_link(lab, board, seed),
        "badlink-harsh": bad_link(lab, board, seed, harsh=True),
    }
    with faults.get(fault, nullcontext()):
        time.sleep(3)
        t0 = time.monotonic()
        rc, out = sh(lab, board, f"{MOUNT} {b}", timeout=SWITCH_LIMIT_S)
        took = time.monotonic() - t0
        if rc != 0:
            _, conn = sh(lab, board, "ss -tnio '( dport = :2049 )'; dmesg | tail -n 5")
    tries = [m.group(0) for m in map(TRY.search, out.splitlines()) if m]
    back, _ = sh(lab, board, f"{MOUNT} {a}", timeout=SWITCH_LIMIT_S)
    return {
        "fault": fault,
        **variant,
        "switch_s": round(took, 1),
        "rc": rc,
        "failed_tries": len(tries),
        "tries": tries,
        "end": out.strip().splitlines()[-3:],
        "mount_options": [line.split()[3] for line in opts.splitlines() if " nfs" in line][:1],
        "connections_after_failure": conn.strip().splitlines(),
        "switched_back": back == 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeo", default="600", help="the timeo= values to try, deciseconds")
    ap.add_argument("--attempt", default="", help="netroot-mount's seconds per try, to try")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of each variant, interleaved")
    ap.add_argument("--board", default="pi-01")
    ap.add_argument(
        "--fault", choices=("halfopen", "badlink", "badlink-harsh", "none"), default="badlink"
    )
    ap.add_argument("--seed", type=int, default=1, help="the bad link's cuts")
    ap.add_argument("--image", default="raspbian", help="the export name the board runs")
    args = ap.parse_args()
    lab = SoakLab.running()
    if lab.plan.server != "ganesha":
        sys.exit(
            "this bench drops packets in the Ganesha container's namespace: lab up --server ganesha"
        )
    board = next((b for b in lab.boards if b.name == args.board), None)
    if board is None:
        sys.exit(f"no board {args.board} in the running lab")
    found = versions(lab, args.image)
    if len(found) < 2:
        sys.exit(
            f"{args.image} has {len(found)} version(s) on the server: export a second one first"
        )
    a, b = found[-1], found[-2]
    rc, _ = sh(lab, board, f"cp -p {MOUNT} {SAVED}")
    if rc != 0:
        sys.exit(f"cannot reach {board.name} as root")
    rounds: list[dict[str, Any]] = []
    try:
        for n in range(args.rounds):
            for timeo in (int(t) for t in args.timeo.split(",")):
                for attempt in [int(t) for t in args.attempt.split(",") if t] or [0]:
                    edit = f"sed -E 's/,timeo=[0-9]+/,timeo={timeo}/g' {SAVED}"
                    if attempt:
                        edit += f" | sed -E 's/^ATTEMPT_TIMEOUT=.*/ATTEMPT_TIMEOUT={attempt}/'"
                    sh(lab, board, f"{edit} > {MOUNT}")
                    variant = {"timeo": timeo, "attempt_s": attempt}
                    r = one_round(lab, board, args.fault, variant, a, b, args.seed + n)
                    r["round"] = n + 1
                    print(json.dumps(r), file=sys.stderr, flush=True)
                    rounds.append(r)
    finally:
        sh(lab, board, f"cp -p {SAVED} {MOUNT} && {MOUNT}", timeout=SWITCH_LIMIT_S)  # its assigned
    print(json.dumps({"board": board.name, "versions": [a, b], "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()
