"""Benchmark `netroot export` at its edges, each against a baseline in the same run (not a test).

    .venv/bin/python -m bench.bench_export_edges [--files 200000] [--whiteouts 100000]
                                                  [--depth 2000] [--work DIR]

Every figure is one process: wall time, CPU time (user + system) and peak RSS, from wait4.
Ratios use CPU time (the machine is shared; wall time is reported beside it):

* 200k files: a plain tar of small files, against GNU `tar -xpf` of the same archive.
* 100k whiteouts: a `docker save` archive whose top layer deletes N files of the layer
  below, against the same archive whose top layer adds N files instead (same member count);
  and N/2 whiteouts: the cost above the lower layer alone, N against N/2, shows the growth
  (2 = linear, 4 = quadratic).
* the whiteouts' own bookkeeping, in process (the member filter's tree model and the writer's
  tables, no disk): N whiteouts against N/2 (2 = linear; it was quadratic). End to end, the
  disk dominates: files deleted before the sync are never written back, so a layer that
  deletes the files below it costs less than the lower layer alone.
* a 2000-deep tree, against a flat tree of as many directories (depth's own cost); then
  `verify` and `prune` of it. In process, the filter's checks for the deep tree against the
  flat one (O(depth) per member: the ratio stays near the ratio of name lengths).
* the no-op export (the same archive again): the fixed cost of one process, against
  `python -c 'import netroot.cli.main'` (interpreter plus imports).
* the longest silence on stderr (a pty, so the progress bar is live) of the 200k export.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

PY = sys.executable


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one child process; it must succeed.

    The peak RSS comes from GNU time: a child forked from this process would inherit this
    process's own high-water mark (it holds the generated archives) in wait4's figure."""
    t = time.perf_counter()
    timed = ["/usr/bin/time", "-f", "maxrss_kib=%M", *cmd]
    p = subprocess.Popen(timed, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode() if p.stderr else ""
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed ({p.returncode}): {err}")
    rss = int(err.rsplit("maxrss_kib=", 1)[1].split()[0]) // 1024
    return round(wall, 3), round(usage.ru_utime + usage.ru_stime, 3), rss


def longest_silence(cmd: list[str], env: dict[str, str]) -> float:
    """The longest gap between two writes to stderr (a pty) over the process's life."""
    master, slave = pty.openpty()
    t0 = last = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    gap = 0.0
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        now = time.perf_counter()
        if ready:
            try:
                if not os.read(master, 65536):
                    break
            except OSError:  # EIO: the child closed the pty
                break
            gap, last = max(gap, now - last), now
        elif p.poll() is not None:
            break
    gap = max(gap, time.perf_counter() - last)
    p.wait()
    os.close(master)
    if p.returncode != 0:
        raise SystemExit(f"export under a pty failed ({p.returncode})")
    return gap if last > t0 else time.perf_counter() - t0


def nr(*args: str) -> list[str]:
    return [PY, "-m", "netroot", *args]


def add(tar: tarfile.TarFile, name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"") -> None:
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    ti.mtime = 1_600_000_000
    ti.size = len(data)
    tar.addfile(ti, io.BytesIO(data) if data else None)


def files_tar(path: Path, n: int, prefix: str = "") -> bytes:
    """n small files in dirs of 1000 (written to `path` when given a name)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for d in range((n + 999) // 1000):
            add(tar, f"{prefix}d{d}", tarfile.DIRTYPE)
        for i in range(n):
            add(tar, f"{prefix}d{i // 1000}/f{i}", data=b"%d\n" % i)
    data = buf.getvalue()
    if path.name:
        path.write_bytes(data)
    return data


def whiteout_tar(n: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(n):
            add(tar, f"d{i // 1000}/.wh.f{i}")
    return buf.getvalue()


def docker_save(path: Path, layers: list[bytes]) -> Path:
    ids = ["sha256:" + hashlib.sha256(b).hexdigest() for b in layers]
    config = json.dumps({"architecture": "amd64", "rootfs": {"type": "layers", "diff_ids": ids}})
    names = [f"l{i}/layer.tar" for i in range(len(layers))]
    manifest = json.dumps([{"Config": "config.json", "RepoTags": ["b:1"], "Layers": names}])
    with tarfile.open(path, "w") as tar:
        for name, blob in [*zip(names, layers, strict=True), ("config.json", config.encode())]:
            add(tar, name, data=blob)
        add(tar, "manifest.json", data=manifest.encode())
    return path


def deep_tar(path: Path, depth: int, flat: bool) -> Path:
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(1, depth + 1):
            add(tar, f"x{i}" if flat else "/".join(["d"] * i), tarfile.DIRTYPE)
        add(tar, ("x1" if flat else "/".join(["d"] * depth)) + "/bottom", data=b"deep\n")
    return path


def filter_costs(w: int, depth: int) -> dict[str, float]:
    """CPU seconds of the member filter alone: whiteouts N vs N/2, deep vs flat tree."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from netroot.export.members import Kind, Member, TreeGuard

    def whiteouts(k: int) -> float:
        guard = TreeGuard()
        for i in range(w):
            guard.admit(Member(f"d{i // 1000}/f{i}", Kind.FILE, 0o644, 0, 0, 0, 0))
        t = time.process_time()
        for i in range(k):
            guard.remove(f"d{i // 1000}/f{i}")
        return time.process_time() - t

    def tree(deep: bool) -> float:
        guard = TreeGuard()
        t = time.process_time()
        for i in range(1, depth + 1):
            path = "/".join(["d"] * i) if deep else f"x{i}"
            guard.admit(Member(path, Kind.DIR, 0o755, 0, 0, 0, 0))
        return time.process_time() - t

    return {
        "guard_whiteouts": whiteouts(w),
        "guard_whiteouts_half": whiteouts(w // 2),
        "guard_deep": tree(True),
        "guard_flat": tree(False),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--whiteouts", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each (least CPU kept)")
    ap.add_argument("--work", type=Path, default=None, help="scratch dir (default: /var/tmp)")
    args = ap.parse_args()
    # A short path: a 2000-deep tree leaves ~90 bytes of PATH_MAX for the export root.
    work = Path(tempfile.mkdtemp(prefix="nrb", dir=args.work or "/var/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
    env |= {"NETROOT_HOME": str(work / "h"), "NO_COLOR": "1"}
    out: dict[str, Any] = {}

    def measure(key: str, cmd: Any) -> None:
        """Run cmd(i) --repeat times (each with fresh roots); keep the least CPU."""
        runs = [run(cmd(i), env) for i in range(args.repeat)]
        out[key] = min(runs, key=lambda r: r[1])

    def export(tar: Path, root: str, *more: str) -> Any:
        return lambda i: nr("-q", "export", str(tar), "--root", str(work / f"{root}{i}"), *more)

    try:
        n, w = args.files, args.whiteouts
        files = work / "files.tar"
        files_tar(files, n)

        def untar(i: int) -> list[str]:
            (work / f"x{i}").mkdir()
            return ["tar", "-C", str(work / f"x{i}"), "-xpf", str(files)]

        measure("files_tar_xpf", untar)
        measure("files_export", export(files, "r-files"))
        measure("noop_export", export(files, "r-files"))  # the same roots: a no-op each
        measure("python_imports", lambda i: [PY, "-c", "import netroot.cli.main"])
        silence = longest_silence(nr("export", str(files), "--root", str(work / "r-pty")), env)
        out["files_export_longest_stderr_silence_s"] = round(silence, 2)
        for i in range(args.repeat):
            shutil.rmtree(work / f"x{i}")

        low = files_tar(Path(""), w)
        measure("lower_only", export(docker_save(work / "lower.tar", [low]), "r-lower"))
        for label, top in (
            ("whiteouts", whiteout_tar(w)),
            ("whiteouts_half", whiteout_tar(w // 2)),
            ("added_files", files_tar(Path(""), w, prefix="n")),
        ):
            save = docker_save(work / f"{label}.tar", [low, top])
            measure(label, export(save, f"r-{label}"))
            save.unlink()

        out["filter_cpu_s"] = {k: round(v, 4) for k, v in filter_costs(w, args.depth).items()}
        for shape in ("deep", "flat"):
            tar = deep_tar(work / f"{shape}.tar", args.depth, flat=shape == "flat")
            measure(f"{shape}_export", export(tar, f"r{shape}"))
        root = str(work / "rdeep0")
        measure("deep_verify", lambda i: nr("-q", "verify", "deep", "--root", root))
        # prune the deep version: a newer one beside it, then keep 1
        run(export(files, "rdeep", "--name", "deep")(0), env)
        measure("deep_prune", lambda i: nr("-q", "prune", "deep", "--keep", "1", "--root", root))
    finally:
        _remove(work)
    report(out, args)


def _remove(path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from netroot.export.fstree import remove_tree

    remove_tree(str(path))  # shutil.rmtree recurses: a 2000-deep tree would break it


def report(out: dict[str, Any], args: argparse.Namespace) -> None:
    def cpu(key: str) -> float:
        return float(out[key][1])

    rows = [
        (f"{args.files} files: tar -xpf", out["files_tar_xpf"]),
        (f"{args.files} files: netroot export", out["files_export"]),
        (f"{args.whiteouts} files, one layer (lower only)", out["lower_only"]),
        (f"{args.whiteouts} whiteouts (top layer)", out["whiteouts"]),
        (f"{args.whiteouts // 2} whiteouts (top layer)", out["whiteouts_half"]),
        (f"{args.whiteouts} added files (top layer)", out["added_files"]),
        (f"{args.depth}-deep tree: export", out["deep_export"]),
        (f"flat tree of {args.depth} dirs: export", out["flat_export"]),
        (f"{args.depth}-deep tree: verify", out["deep_verify"]),
        (f"{args.depth}-deep tree: prune", out["deep_prune"]),
        ("no-op export (fixed cost)", out["noop_export"]),
        ("python -c 'import netroot.cli.main'", out["python_imports"]),
    ]
    width = max(len(r[0]) for r in rows)
    for label, (secs, cpu_s, rss) in rows:
        print(f"{label:<{width}}  {secs:7.2f} s wall  {cpu_s:7.2f} s CPU  {rss:5d} MiB peak")
    guard = out["filter_cpu_s"]
    for key, value in guard.items():
        print(f"{'filter only: ' + key:<{width}}  {value:7.3f} s CPU")
    ratios = {
        "files_export_vs_tar_xpf": cpu("files_export") / cpu("files_tar_xpf"),
        "whiteouts_vs_lower_only": cpu("whiteouts") / cpu("lower_only"),
        "whiteouts_vs_added_files": cpu("whiteouts") / cpu("added_files"),
        "filter_whiteouts_n_vs_half": guard["guard_whiteouts"] / guard["guard_whiteouts_half"],
        "deep_vs_flat_export": cpu("deep_export") / cpu("flat_export"),
        "filter_deep_vs_flat": guard["guard_deep"] / guard["guard_flat"],
        "noop_vs_imports": cpu("noop_export") / cpu("python_imports"),
    }
    for key, value in ratios.items():
        print(f"{key:<{width}}  {value:7.3f}")
    silence = out["files_export_longest_stderr_silence_s"]
    print(f"{'longest stderr silence (200k export)':<{width}}  {silence:7.2f} s")
    print(json.dumps(out | {"ratios": {k: round(v, 3) for k, v in ratios.items()}}, indent=1))


if __name__ == "__main__":
    main()
