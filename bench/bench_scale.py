"""Benchmark: a classroom at scale, on light boards (6, 25, 50 and 100 of them, in one run).

For each size N in turn, the lab grows to N light boards (`netroot lab up --board-kind light`:
a container per board, its NFS client in userspace; docs/lab.md), the new boards get their first
version (the light image, `light`: their first provision: the board role, the boot config, the
reboot it asks for, the mount; "first", measured over the N boards), then on the N boards (a
group bench_N of a copy of the lab inventory):
- rollout: a new version to the N boards in the README's recommended shape (`--canary 1
  --batch 100%`, `--qpu skip`; the image export is part of it), no reboot;
- status: `netroot status bench_N`;
- smoke: `netroot smoke bench_N --qpu skip`.

For each phase: the controller's CPU (netroot, Ansible, ssh, pytest: the whole process tree of
the command, RUSAGE_CHILDREN, with this process a child subreaper so the ssh masters Ansible
leaves behind are counted too; the boards are containers started by dockerd, not descendants,
and are not counted), wall time, the peak RSS of its largest process, and the bytes it wrote to
disk (ru_oublock); then the ratios between sizes. Goals: controller CPU per board at 100 no
more than 1.2x that at 6; status of 100 under 5 s; a rollout (no reboot) to 100 under 10 min.

Run (the lab is the caller's: take its lock, and take the lab down after):
  flock /tmp/netroot-lab.lock bash -c '.venv/bin/python -m bench.bench_scale --sizes 6,25,50,100;
  .venv/bin/python -m netroot lab down'

`--phases status` measures status alone: the lab goes up once at the largest size and the boards
get no first version (the probe reads the same three files whether they hold a version or not:
the same round trip); `--repeat K` runs it K times per size; `--trees A,B` runs netroot from each
source tree in turn (before and after a change, in one lab). Each status must find every board
reachable, or the run stops.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from bench.children import become_subreaper, reap_orphans

BASE = "netroot-lab/light:bookworm"
NETROOT = [sys.executable, "-m", "netroot"]
ROLLOUT = ("--name", "light", "--canary", "1", "--batch", "100%", "--yes", "--qpu", "skip")


@dataclass(frozen=True)
class Phase:
    boards: int
    phase: str
    cpu_s: float
    wall_s: float
    max_rss_mib: float
    written_mib: float
    tree: str = ""  # the netroot source tree it ran from ("": this one)
    # the whole machine's busy CPU meanwhile: the controller's, the boards' sshd and sudo, the
    # server's, anything else running (the machine's share beyond the controller's is the rest)
    machine_cpu_s: float = 0.0

    @property
    def cpu_per_board(self) -> float:
        return self.cpu_s / self.boards


def _children() -> resource.struct_rusage:
    return resource.getrusage(resource.RUSAGE_CHILDREN)


def _machine_busy_s() -> float:
    """The CPU time all cores spent busy since boot (/proc/stat: all but idle and iowait)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def measured(
    inventory: Path,
    boards: int,
    phase: str,
    *args: str,
    ok: tuple[int, ...] = (0,),
    tree: str = "",
) -> Phase:
    """One netroot command, measured (see the module's docstring); `tree`: run netroot from
    that source tree (`python -m` puts its working directory first on the path)."""
    env = {**os.environ, "NO_COLOR": "1", "NETROOT_INVENTORY": str(inventory)}
    if tree:
        env["PYTHONPATH"] = tree
    reap_orphans()
    before, wall0, busy0 = _children(), time.monotonic(), _machine_busy_s()
    proc = subprocess.run(
        [*NETROOT, "-q", *args], capture_output=True, text=True, env=env, cwd=tree or None
    )
    wall, busy = time.monotonic() - wall0, _machine_busy_s() - busy0
    reap_orphans()
    after = _children()
    if proc.returncode not in ok:
        sys.exit(f"netroot {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    if phase == "status":  # a board not reached would time a failure, not a probe
        rows = json.loads(proc.stdout)["boards"]
        missed = [r["board"] for r in rows if not r["reachable"]]
        if missed or len(rows) != boards:
            sys.exit(f"status reached {len(rows) - len(missed)} of {boards}: {missed[:5]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Phase(
        boards=boards,
        phase=phase,
        cpu_s=round(cpu, 2),
        wall_s=round(wall, 1),
        # ru_maxrss of the children: the largest one so far (KiB), not a sum
        max_rss_mib=round(after.ru_maxrss / 1024, 1),
        written_mib=round((after.ru_oublock - before.ru_oublock) * 512 / 2**20, 1),
        tree=tree,
        machine_cpu_s=round(busy, 2),
    )


def variant(tag: str) -> str:
    """The light image plus a stamp: a new version of it (built locally, never pulled)."""
    ref = f"{BASE.rpartition(':')[0]}:{tag}"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(f"FROM {BASE}\nCOPY stamp /etc/netroot-bench-stamp\n")
        Path(tmp, "stamp").write_text(f"{tag}\n")
        subprocess.run(["docker", "build", "--pull=false", "-q", "-t", ref, tmp],
                       check=True, capture_output=True)  # fmt: skip
    return ref


def inventory_with_groups(sizes: list[int], where: Path) -> Path:
    """A copy of the lab inventory with a group bench_N of the first N boards for each size."""
    from netroot import inventory, paths

    source = paths.lab_inventory()
    boards = list(inventory.load(source).boards)
    if len(boards) < max(sizes):
        sys.exit(f"the lab has {len(boards)} boards; expected {max(sizes)}")
    data = yaml.safe_load(source.read_text())
    children = data["all"]["children"]["boards"].setdefault("children", {}) or {}
    data["all"]["children"]["boards"]["children"] = children
    for n in sizes:
        children[f"bench_{n}"] = {"hosts": {str(b): None for b in boards[:n]}}
    path = where / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def lab_up(boards: int) -> float:
    from netroot import paths

    env = {**os.environ, "NO_COLOR": "1", "NETROOT_INVENTORY": str(paths.lab_inventory())}
    t0 = time.monotonic()
    argv = [*NETROOT, "lab", "up", "--board-kind", "light", "--boards", str(boards)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"lab up failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return time.monotonic() - t0


def ratios(rows: list[Phase], sizes: list[int]) -> list[dict[str, object]]:
    """Per phase (and source tree): CPU per board and wall at each size against the smallest
    size; of repeated runs, the median's."""
    out: list[dict[str, object]] = []
    small = min(sizes)
    for phase, tree in dict.fromkeys((r.phase, r.tree) for r in rows):
        by_size = {
            n: median([r for r in rows if (r.phase, r.tree, r.boards) == (phase, tree, n)])
            for n in sizes
        }
        base = by_size[small]
        for n in sizes:
            r = by_size[n]
            out.append({
                "phase": phase, "tree": tree, "boards": n, "cpu_s": r.cpu_s, "wall_s": r.wall_s,
                "cpu_per_board_ratio": round(r.cpu_per_board / max(base.cpu_per_board, 1e-9), 2),
                "wall_ratio": round(r.wall_s / max(base.wall_s, 1e-9), 2),
                "boards_ratio": round(n / small, 2),
            })  # fmt: skip
    return out


def median(runs: list[Phase]) -> Phase:
    """The run of median wall time (the lower of the two middle ones for an even count)."""
    return sorted(runs, key=lambda r: r.wall_s)[(len(runs) - 1) // 2]


PHASES = ("rollout", "status", "smoke")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="6,25,50,100")
    parser.add_argument("--phases", default=",".join(PHASES), help="of rollout,status,smoke")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each phase per size")
    parser.add_argument("--trees", default="", help="netroot source trees to compare (a,b)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    phases = [p for p in PHASES if p in args.phases.split(",")]
    trees = [str(Path(t).resolve()) for t in args.trees.split(",") if t] or [""]
    status_only = phases == ["status"]
    become_subreaper()
    rows: list[Phase] = []
    firsts: list[Phase] = []
    ups: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if status_only:  # one lab at the largest size, no first version (the docstring)
            ups[max(sizes)] = round(lab_up(max(sizes)), 1)
            print(f"lab up to {max(sizes)} boards {ups[max(sizes)]} s", flush=True)
        for n in sizes:  # the lab grows to each size in turn: the figures come size by size
            inv = inventory_with_groups([n], Path(tmp))
            group = f"bench_{n}"
            argvs = {
                "status": ("status", group, "--json"),
                "smoke": ("smoke", group, "--qpu", "skip"),
            }
            if not status_only:
                ups[n] = round(lab_up(n), 1)
                # the new boards' first version (the board role, the boot config and its reboot)
                first = measured(inv, n, "first", "rollout", BASE, "--group", group, *ROLLOUT)
                firsts.append(first)
                print(f"lab up to {n} boards {ups[n]} s; first version: {first}", flush=True)
                image = variant(f"bench-{n}")
                argvs["rollout"] = ("rollout", image, "--group", group, *ROLLOUT)
            for phase in phases:
                for _ in range(args.repeat):
                    for tree in trees:  # interleaved: a drift of the machine hits each alike
                        ok = (0, 1) if phase == "status" else (0,)  # 1: drift (no version yet)
                        row = measured(inv, n, phase, *argvs[phase], ok=ok, tree=tree)
                        rows.append(row)
                        print(f"{row}  cpu/board {row.cpu_per_board:.3f} s", flush=True)
    print(f"{'boards':>6} {'phase':>8} {'cpu s':>8} {'cpu s/board':>12} {'wall s':>8} "
          f"{'rss MiB':>8} {'written MiB':>12}  tree")  # fmt: skip
    for r in rows:
        print(f"{r.boards:>6} {r.phase:>8} {r.cpu_s:>8} {r.cpu_per_board:>12.3f} {r.wall_s:>8} "
              f"{r.max_rss_mib:>8} {r.written_mib:>12}  {r.tree}")  # fmt: skip
    result = {
        "lab_up_s": ups,
        "first": [asdict(f) for f in firsts],
        "rows": [asdict(r) for r in rows],
        "ratios": ratios(rows, sizes),
        "goals": {"cpu_per_board_ratio_max": 1.2, "status_s_max": 5, "rollout_s_max": 600},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
