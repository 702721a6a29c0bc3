"""What mounting a version as immutable buys a Python import on a lab board (not a test).

    flock /tmp/netroot-lab.lock .venv/bin/python -m bench.bench_nfs_profile --board pi-01 \\
        [--deploy] [--code 'import numpy'] [--runs 3] [--vers 4.1,3]

On one running SD board with a version mounted (--deploy first rolls the lab image out), in one
run: the version copied to the board's own disk (the baseline), and the same version mounted
over NFS from the board's server once per NFS version with the options boards used before the
profile (the export's: close-to-open, 3-60 s attribute cache) and once with them plus the
profile (netroot_board_nfs_version_profile: nocto, actimeo, lookupcache), each exactly as
templates/netroot-mount.j2 renders them for this board. Each root is what a board's chroot is:
an overlay with a tmpfs upper over it, /proc and /dev bound in. In each, CODE runs as a whole
`python3 -B -c` process (-B: the local copy must not gain .pyc files the export lacks), timed
on the board; cold is right after dropping the board's caches (dentries, inodes, pages), warm
is the next run. Around each, the board's NFS client counters (/proc/net/rpc/nfs, read with
netroot.nfsstat): the RPCs the import cost. Prints JSON (medians; ratios to the local disk and
of after to before); progress on stderr.

Under QEMU TCG the CPU is slow and the virtual network fast, so seconds understate what NFS
costs a real 3B on 100 Mb/s; the RPC counts carry over as they are.

Measured: see bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from typing import Any

from bench.labcmd import netroot_on_lab
from netroot import paths
from netroot.adapters.ssh import Session
from netroot.inventory import load
from netroot.nfsstat import ClientCounters, parse
from netroot.sshtarget import target_for
from netroot.templating import Renderer

IMAGE = "netroot-lab/raspbian:bookworm"
BASE = "/run/netroot-bench"
LOCAL = "/var/tmp/netroot-bench"  # the board's own disk, not tmpfs

# Board side, once: the local copy and each root (an overlay like the chroot's) from ROOTS
# ("name nfs|local SOURCE OPTIONS" lines).
PREPARE = r"""
set -eu
if [ ! -d "$LOCAL/$VERSION" ]; then
    mkdir -p "$LOCAL"
    rm -rf "$LOCAL/.tmp"
    cp -a "/run/netroot/shared/versions/$VERSION" "$LOCAL/.tmp"
    mv "$LOCAL/.tmp" "$LOCAL/$VERSION"
fi
echo "$ROOTS" | while read -r name kind source options; do
    [ -n "$name" ] || continue
    d=$BASE/$name
    mkdir -p "$d/lower" "$d/rw" "$d/root"
    if [ "$kind" = nfs ]; then
        mountpoint -q "$d/lower" || mount -t nfs -o "$options" "$source" "$d/lower"
    else
        mountpoint -q "$d/lower" || mount --bind "$source" "$d/lower"
    fi
    mountpoint -q "$d/rw" || mount -t tmpfs -o mode=0755 bench "$d/rw"
    mkdir -p "$d/rw/upper" "$d/rw/work"
    mountpoint -q "$d/root" || mount -t overlay bench \
        -o "lowerdir=$d/lower,upperdir=$d/rw/upper,workdir=$d/rw/work" "$d/root"
    for m in proc dev; do mountpoint -q "$d/root/$m" || mount --rbind "/$m" "$d/root/$m"; done
done
"""
# Board side, per measurement: counters, time, counters (ns, the board's clock).
MEASURE = r"""
set -eu
if [ "$COLD" = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi
a=$(cat /proc/net/rpc/nfs)
t0=$(date +%s%N)
chroot "$BASE/$NAME/root" /usr/bin/python3 -B -c "$CODE" >/dev/null
t1=$(date +%s%N)
b=$(cat /proc/net/rpc/nfs)
printf '%s\n@@\n%s\n@@\n%s\n' "$((t1 - t0))" "$a" "$b"
"""
CLEANUP = r"""
for d in "$BASE"/*; do
    [ -d "$d" ] || continue
    umount -R "$d/root" 2>/dev/null || umount -l "$d/root" 2>/dev/null || true
    umount "$d/rw" 2>/dev/null || true
    umount "$d/lower" 2>/dev/null || umount -l "$d/lower" 2>/dev/null || true
done
rm -rf "$BASE"
"""


def say(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _board_script(session: Session, script: str, env: dict[str, str], timeout: float) -> str:
    head = "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())
    res = session.run_privileged("bash -s", stdin=(head + script).encode(), timeout=timeout)
    if res.rc != 0:
        sys.exit(f"on the board: rc {res.rc}: {res.stderr.decode()[-1500:]}")
    return res.stdout.decode()


def _line(text: str, name: str) -> str:
    return next(x for x in text.splitlines() if x.startswith(f"{name}="))[len(name) + 1 :]


def mount_options(board: str, vers: str) -> tuple[str, str]:
    """(the export's options, the version's) as netroot-mount.j2 renders them for `board`."""
    renderer = Renderer(load(paths.lab_inventory()), {"netroot_board_nfs_version": vers})
    text = next(r.text for r in renderer.render_board(board) if r.template == "netroot-mount.j2")
    return _line(text, "OPTIONS"), _line(text, "VERSION_OPTIONS")


def measure(session: Session, name: str, code: str, cold: bool) -> tuple[float, ClientCounters]:
    env = {"BASE": BASE, "NAME": name, "CODE": code, "COLD": "1" if cold else "0"}
    ns, before, after = _board_script(session, MEASURE, env, timeout=1800).split("\n@@\n")
    return int(ns) / 1e9, parse(after) - parse(before)


def figures(board_name: str, code: str, runs: int, versions: list[str]) -> dict[str, Any]:
    board = load(paths.lab_inventory()).resolve([board_name])[0]
    with Session(target_for(board.host)) as session:
        status = json.loads(
            _board_script(session, "/usr/local/sbin/netroot-mount --status\n", {}, 60)
        )
        version, server = status["mounted"], status["server"]
        if not version:
            sys.exit(f"{board_name}: no version mounted (run with --deploy)")
        roots = [("local", "local", f"{LOCAL}/{version}", "-")]
        for vers in versions:
            export, immutable = mount_options(board_name, vers)
            source = f"{server}/versions/{version}"
            roots.append((f"v{vers}-before", "nfs", source, export))
            roots.append((f"v{vers}-after", "nfs", source, immutable))
        lines = "\n".join(" ".join(r) for r in roots)
        say(f"{board_name}: version {version} from {server}; copying it to {LOCAL} and mounting")
        env = {"BASE": BASE, "LOCAL": LOCAL, "VERSION": version, "ROOTS": lines}
        try:
            _board_script(session, PREPARE, env, timeout=3600)
            samples: dict[str, dict[str, list[tuple[float, ClientCounters]]]] = {}
            for i in range(runs):
                for name, *_ in roots:
                    for state in ("cold", "warm"):
                        got = measure(session, name, code, state == "cold")
                        samples.setdefault(name, {}).setdefault(state, []).append(got)
                        say(f"run {i + 1} {name} {state}: {got[0]:.2f} s, {got[1].calls} RPCs")
        finally:
            _board_script(session, CLEANUP, {"BASE": BASE}, timeout=300)
    return report(board_name, version, code, roots, samples)


def report(
    board: str,
    version: str,
    code: str,
    roots: list[tuple[str, str, str, str]],
    samples: dict[str, dict[str, list[tuple[float, ClientCounters]]]],
) -> dict[str, Any]:
    out: dict[str, Any] = {"board": board, "version": version, "code": code, "roots": {}}
    med: dict[tuple[str, str], tuple[float, float]] = {}
    for name, _kind, _source, options in roots:
        row: dict[str, Any] = {"options": options}
        for state, got in samples[name].items():
            seconds = statistics.median(s for s, _ in got)
            calls = statistics.median(c.calls for _, c in got)
            med[(name, state)] = (seconds, calls)
            row[state] = {
                "seconds": [round(s, 2) for s, _ in got],
                "median_s": round(seconds, 2),
                "rpc_calls": [c.calls for _, c in got],
                "median_rpc_calls": calls,
                "ops_of_last": got[-1][1].summary(),
            }
            if name != "local":
                row[state]["vs_local"] = round(seconds / med[("local", state)][0], 2)
        out["roots"][name] = row
    for name, *_ in roots:
        if name.endswith("-after"):
            before = name.removesuffix("-after") + "-before"
            out["roots"][name]["after_vs_before"] = {
                state: {
                    "seconds": round(med[(name, state)][0] / med[(before, state)][0], 2),
                    "rpc_calls": round(med[(name, state)][1] / max(med[(before, state)][1], 1), 3),
                }
                for state in ("cold", "warm")
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", default="pi-01", help="an SD board of the running lab")
    parser.add_argument("--deploy", action="store_true", help="roll the lab image out first")
    parser.add_argument("--image", default=IMAGE, help="what --deploy rolls out")
    parser.add_argument("--code", default="import numpy", help="what python3 -c runs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vers", default="4.1,3", help="NFS versions, comma-separated")
    args = parser.parse_args()
    if args.deploy:
        rollout = ("rollout", args.image, "--name", "raspbian", "--group", args.board,
                   "--canary", "0", "--batch", "100%", "--qpu", "skip", "--yes")  # fmt: skip
        took = netroot_on_lab(*rollout)
        say(f"rollout {took:.0f} s")
    out = figures(args.board, args.code, args.runs, args.vers.split(","))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
