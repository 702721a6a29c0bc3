"""The running lab as the fault soak sees it: its plan, netroot on its inventory, and a `Seen`
read after each operation (bench/soak_check.py checks it). Not a test; needs a running lab."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.soak_check import BoardSeen, Seen, ServerSeen
from netroot import paths
from netroot.lab import state as lab_state
from netroot.lab.host.ready import ssh_argv
from netroot.lab.plan import BoardPlan, LabPlan, ServerPlan, make_plan
from netroot.remote import lock
from netroot.remote.fleet import STATE_NAME

IMAGE_NAME = "raspbian"  # the lab boards' export name (netroot_image)
NETROOT = [sys.executable, "-m", "netroot"]


@dataclass(frozen=True)
class SoakLab:
    plan: LabPlan
    env: dict[str, str]

    @classmethod
    def running(cls) -> SoakLab:
        lab_dir = paths.lab_dir()
        saved = lab_state.load(lab_dir / "state.json")
        if not saved:
            sys.exit("no lab here: start one first (netroot lab up --boards 2), under the lab lock")
        plan = make_plan(
            int(saved["boards"]), lab_dir, Path(saved["export_root"]),
            arch=str(saved.get("arch") or "armhf"), netboot=int(saved.get("netboot") or 0),
            server=str(saved.get("server") or "ganesha"), servers=int(saved.get("servers") or 1),
        )  # fmt: skip
        env = {
            **os.environ, "NETROOT_INVENTORY": str(paths.lab_inventory()), "NO_COLOR": "1",
            "COLUMNS": "200", "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        }  # fmt: skip
        return cls(plan, env)

    @property
    def boards(self) -> tuple[BoardPlan, ...]:
        return self.plan.all_boards

    @property
    def home(self) -> ServerPlan:
        return self.plan.nfs[0]  # the fleet home: the first server (the lab sets no other)

    def netroot(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*NETROOT, *args], env=env or self.env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip

    def ssh(self, address: str, command: str, user: str = "pi", timeout: float = 60) -> int:
        lab = self.plan.lab_dir
        argv = ssh_argv(address, lab / "id_ed25519", lab / "known_hosts", command, user=user)
        argv[1:1] = ["-o", "ConnectTimeout=10", "-o", "BatchMode=yes"]
        try:
            return subprocess.run(
                argv, capture_output=True, timeout=timeout, check=False
            ).returncode
        except subprocess.TimeoutExpired:
            return 124

    def server_sh(self, srv: ServerPlan, command: str) -> int:
        """Run a shell command as root on an NFS server (the container, or the VM over SSH)."""
        if self.plan.server == "kernel":
            return self.ssh(
                srv.address, f"sudo -n sh -c {json.dumps(command)}", user=self.plan.server_user
            )
        argv = ["docker", "exec", srv.container, "sh", "-c", command]
        return subprocess.run(argv, capture_output=True, timeout=120, check=False).returncode

    def current(self) -> dict[str, str | None]:
        return {srv.name: self.snapshot(srv)["current"] for srv in self.plan.nfs}

    def remote(self) -> bool:
        """The export roots are on the kernel server VMs (reached over SSH), not on this host."""
        return self.plan.server == "kernel"

    def run_on(self, srv: ServerPlan, argv: list[str], stdin: str = "") -> str:
        """Run `argv` as root where `srv`'s export root is (this host for Ganesha, whose
        container bind-mounts it; the VM over SSH with sudo); its stdout ("" on failure)."""
        try:
            done = subprocess.run(self.run_argv(srv, argv), input=stdin, capture_output=True,
                                  text=True, timeout=120, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            return ""
        return done.stdout if done.returncode == 0 else ""

    def snapshot(self, srv: ServerPlan) -> dict[str, Any]:
        """`srv`'s export of the image read where it lives (one SSH for a kernel server)."""
        python = "python3" if self.remote() else sys.executable
        out = self.run_on(srv, [python, "-", str(srv.export_root), IMAGE_NAME], SNAPSHOT)
        try:
            data: dict[str, Any] = json.loads(out)
        except ValueError:
            sys.exit(f"could not read {srv.name}'s export root {srv.export_root}")
        return data

    def follow(self) -> EventFollower:
        """The fleet's event log from now on, as netroot appends to it."""
        # From the log's size now (not `tail -n 0`, which may open it after "ready").
        log = shlex.quote(str(self.events_file()))
        script = (
            f"n=$(( $(stat -c %s {log} 2>/dev/null || echo 0) + 1 )); "
            f"tail -c +$n -F {log} 2>/dev/null & t=$!; echo ready; cat >/dev/null; kill $t"
        )
        return EventFollower.start(self.run_argv(self.home, ["sh", "-c", script]))

    def run_argv(self, srv: ServerPlan, argv: list[str]) -> list[str]:
        if not self.remote():
            return argv
        lab = self.plan.lab_dir
        quoted = " ".join(shlex.quote(a) for a in argv)
        return ssh_argv(srv.address, lab / "id_ed25519", lab / "known_hosts",
                        f"sudo -n {quoted}", user=self.plan.server_user)  # fmt: skip

    def events_file(self) -> Path:
        from netroot.fleet.events import EVENTS_NAME

        return self.home.export_root / EVENTS_NAME

    def seen(self, powered: dict[str, bool]) -> Seen:
        """The lab read after an operation (every fault healed, no netroot running)."""
        status = subprocess.run(
            [*NETROOT, "status", "--json"], env=self.env, capture_output=True, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        try:
            rows = {r["board"]: r for r in json.loads(status.stdout)["boards"]}
        except (ValueError, KeyError) as e:
            sys.exit(
                f"netroot status --json: no table (exit {status.returncode}, {e}):\n"
                + status.stderr[-1500:]
            )
        boards = []
        for b in self.boards:
            row = rows.get(b.name, {})
            mounted = row.get("mounted") or None
            runs = False
            if row.get("reachable") and mounted:
                probe = "true" if b.netboot else "sudo -n chroot /run/netroot/root /bin/true"
                runs = self.ssh(b.address, probe) == 0
            boards.append(
                BoardSeen(
                    b.name,
                    powered.get(b.name, True),
                    bool(row.get("reachable")),
                    mounted,
                    runs,
                    str(row.get("drift") or ""),
                    str(row.get("server") or self.home.name),
                )
            )
        events = subprocess.run(
            [*NETROOT, "events", "--json"], env=self.env, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        snaps = {srv.name: self.snapshot(srv) for srv in self.plan.nfs}
        home = snaps[self.home.name]
        return Seen(
            boards=tuple(boards),
            servers={name: _server(snap) for name, snap in snaps.items()},
            state_text=home["state"],
            events_text=events.stdout
            if events.returncode == 0
            else "{events exit " + f"{events.returncode}: {events.stderr[-300:]}",
            locks=tuple(self.held_locks(snaps)),
        )

    def held_locks(self, snaps: dict[str, dict[str, Any]]) -> list[str]:
        """The fleet's writer lock whose holder is alive, and each export name's flock held."""
        held = []
        text = snaps[self.home.name]["lock"]
        # A holder on this host whose process is gone is taken over by the next writer: only a
        # live one (no netroot runs while the soak checks) is a lock left held.
        if text is not None:
            try:
                pid = int(json.loads(text).get("pid", 0))
            except (ValueError, AttributeError, TypeError):
                pid = 0
            if pid == 0 or Path(f"/proc/{pid}").exists():
                held.append(f"{self.home.export_root / lock.LOCK_NAME}: {text[:200]}")
        for srv in self.plan.nfs:
            if snaps[srv.name]["name_lock"] is not None:
                held.append(f"{srv.name}:{srv.export_root / IMAGE_NAME / '.lock'}: "
                            f"{snaps[srv.name]['name_lock']}")  # fmt: skip
        return held


@dataclass
class EventFollower:
    """The event log's new lines (`tail -F`, here or on the server), read by a thread: a
    fault's trigger asks whether a board has reached a phase since the command started."""

    proc: subprocess.Popen[str]
    since: float
    events: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, argv: list[str]) -> EventFollower:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        assert proc.stdout is not None
        proc.stdout.readline()  # "ready": tail has opened the log (or waits for it)
        follower = cls(proc, time.time() - 1.0)
        threading.Thread(target=follower._read, daemon=True).start()
        return follower

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # tail's own notes, a line cut by a rewrite
            # A log replaced whole is printed again from its start: only what is new counts.
            if isinstance(event, dict) and float(event.get("time") or 0) >= self.since:
                with self.lock:
                    self.events.append(event)

    def reached(self, board: str, phase: str) -> bool:
        with self.lock:
            return any(e.get("board") == board and e.get("event") == phase for e in self.events)

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the remote `cat` ends, and kills its tail
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# Run with python3 where an export root lives (argv: root, image): the image's `current`,
# version directories and manifests, the fleet state, the writer's lock file, whether the
# name's flock is held (taken and let go at once when free), the filesystem's size and whether
# it is the machine's root filesystem. JSON on stdout.
SNAPSHOT = """
import fcntl, json, os, sys
root, image = sys.argv[1], sys.argv[2]
def read(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return None
try:
    current = os.path.basename(os.readlink(os.path.join(root, image, "current")))
except OSError:
    current = None
vdir = os.path.join(root, image, "versions")
entries = os.listdir(vdir) if os.path.isdir(vdir) else []
held = None
name_lock = os.path.join(root, image, ".lock")
if os.path.exists(name_lock):
    fd = os.open(name_lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held = (read(name_lock) or "")[:200]
    finally:
        os.close(fd)
fs = os.statvfs(root)
print(json.dumps({
    "current": current,
    "versions": [e for e in entries if os.path.isdir(os.path.join(vdir, e))],
    "manifests": [e[:-5] for e in entries if e.endswith(".json")],
    "state": read(os.path.join(root, STATE_NAME)),
    "lock": read(os.path.join(root, LOCK_NAME)),
    "name_lock": held,
    "fs_bytes": fs.f_blocks * fs.f_frsize,
    "own_fs": os.stat(root).st_dev != os.stat("/").st_dev,
}))
"""
SNAPSHOT = f"STATE_NAME, LOCK_NAME = {STATE_NAME!r}, {lock.LOCK_NAME!r}\n" + SNAPSHOT


def _server(snap: dict[str, Any]) -> ServerSeen:
    return ServerSeen(frozenset(snap["versions"]), frozenset(snap["manifests"]), snap["current"])
