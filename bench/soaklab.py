"""The running lab as the fault soak sees it: its plan, netroot on its inventory, and a `Seen`
read after each operation (bench/soak_check.py checks it). Not a test; needs a running lab."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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
        return {srv.name: _current(srv.export_root) for srv in self.plan.nfs}

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
        state_file = self.home.export_root / STATE_NAME
        return Seen(
            boards=tuple(boards),
            servers={srv.name: _server(srv.export_root) for srv in self.plan.nfs},
            state_text=state_file.read_text() if state_file.exists() else None,
            events_text=events.stdout
            if events.returncode == 0
            else "{events exit " + f"{events.returncode}: {events.stderr[-300:]}",
            locks=tuple(self.held_locks()),
        )

    def held_locks(self) -> list[str]:
        """The fleet's writer lock whose holder is alive, and each export name's flock held."""
        held = []
        holder = lock.read_holder(self.home.export_root)
        # A holder on this host whose process is gone is taken over by the next writer: only a
        # live one (no netroot runs while the soak checks) is a lock left held.
        if holder is not None and (holder.pid == 0 or Path(f"/proc/{holder.pid}").exists()):
            held.append(f"{self.home.export_root / lock.LOCK_NAME}: {holder.describe()}")
        for srv in self.plan.nfs:
            name_lock = srv.export_root / IMAGE_NAME / ".lock"
            if not name_lock.exists():
                continue
            fd = os.open(name_lock, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(f"{name_lock}: {name_lock.read_text()[:200]}")
            finally:
                os.close(fd)
        return held


def _current(root: Path) -> str | None:
    try:
        return Path(os.readlink(root / IMAGE_NAME / "current")).name
    except OSError:
        return None


def _server(root: Path) -> ServerSeen:
    versions = root / IMAGE_NAME / "versions"
    entries = list(versions.iterdir()) if versions.is_dir() else []
    dirs = frozenset(p.name for p in entries if p.is_dir())
    manifests = frozenset(p.name[: -len(".json")] for p in entries if p.name.endswith(".json"))
    return ServerSeen(dirs, manifests, _current(root))
