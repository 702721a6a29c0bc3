"""A foreign tree's Python bytecode, compiled on the host instead of under qemu-user.

Debian's Python packages byte-compile their modules in their postinst (`py3compile -p PKG
[DIR]`), and in an armhf or arm64 tree built on x86-64 that runs under qemu-user on one
emulated core. Bytecode does not depend on the architecture: the host's own interpreter makes
the same .pyc files, natively. So while the tree is built, py3compile is told to skip every file
(`BCEP_FILE`, a line of its exclusion list, written by mmdebstrap's essential hook), and this
script, mmdebstrap's customize hook (it runs on the host, the tree's root as its argument),
removes that line and compiles what each postinst's py3compile would have compiled: the same
files (the package's file list, py3compile's public-directory rule, the tree's other exclusions
such as the torch tree's tests), the same names (`__pycache__/NAME.cpython-3X.pyc`), the same
invalidation mode (py_compile's default: a timestamp, or a checked hash when
SOURCE_DATE_EPOCH is set, as in the chroot: mmdebstrap passes the environment on), the in-tree
path as co_filename (py_compile's dfile: no build root in tracebacks), umask 022 as dpkg gives
maintainer scripts.

Only when the host's interpreter is the tree's own build (the same python3.X-minimal version
in both dpkg databases): another version's compiler may emit other bytecode, or another magic
number. Otherwise, and for any py3compile line this script does not read (options other than
-p and directories, shell variables), it runs the tree's own py3compile in the chroot, under
qemu-user as before: the tree is the same either way, only the time differs.

Standard library only: mmdebstrap runs it by path with netroot's interpreter, as root (the lab
runs as root: mmdebstrap's root mode, whose hooks write the tree as root, as dpkg does).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

BCEP_DIR = "usr/share/python3/bcep"
DEBIAN_DEFAULTS = "usr/share/python3/debian_defaults"  # its default-version: python3.X
BCEP_FILE = "netroot-compiled-on-host"
EXCLUDE_ALL = "re|3.0-|/|.*"  # every file, every Python 3: py3compile compiles nothing
# py3compile's (debpython's) own rule for a public module's directory.
PUBLIC_DIR_RE = re.compile(r".*?/usr/lib/python(\d(?:.\d+)?)/(site|dist)-packages")
RANGE_RE = re.compile(r"^(-)?(\d\.\d+)(?:(-)(\d\.\d+)?)?$")
# Compiles each in-tree path read from stdin into the tree at argv[1]: py_compile's compile()
# as py3compile's worker (`python3.X -m py_compile -`) calls it, with the tree as a prefix.
# Each stdin line: the source and the .pyc to write, both resolved in the tree, and the in-tree
# name (co_filename).
WORKER = """\
import os, py_compile, sys
os.umask(0o022)
for line in sys.stdin:
    source, cfile, name = line.rstrip("\\n").split("\\t")
    py_compile.compile(source, cfile=cfile, dfile=name, doraise=True)
"""

# What a host interpreter says of itself: its release and its bytecode's magic number.
PROBE = (
    "import importlib.util, platform;"
    "print(platform.python_version(), importlib.util.MAGIC_NUMBER.hex())"
)

Version = tuple[int, int]


@dataclass(frozen=True)
class Exclusion:
    """One line of py3compile's exclusion list (/usr/share/python3/bcep/*)."""

    kind: str  # re, dir or file
    versions: tuple[Version | None, Version | None]  # [min, max); equal: that version only
    dname: str
    pattern: re.Pattern[str] | None


@dataclass(frozen=True)
class Call:
    """One `py3compile -p PACKAGE [DIR...]` of a postinst."""

    package: str
    dirs: tuple[str, ...]


def parse_vrange(value: str) -> tuple[Version | None, Version | None]:
    """debpython's version range: '3.0-', '-3.7', '3.1-3.3', '3.2', '' (all)."""
    if value in ("", "-"):
        return None, None
    match = RANGE_RE.match(value)
    if not match:
        raise ValueError(f"version range is invalid: {value}")
    maxonly, first, dash, second = match.groups()

    def ver(text: str | None) -> Version | None:
        if not text:
            return None
        major, minor = text.split(".")
        return int(major), int(minor)

    if not maxonly and not dash:
        return ver(first), ver(first)
    if maxonly:
        return None, ver(first)
    return ver(first), ver(second)


def in_range(version: Version, vrange: tuple[Version | None, Version | None]) -> bool:
    low, high = vrange
    if low is not None and low == high:
        return version == low
    return (low is None or low <= version) and (high is None or version < high)


def parse_bcep(text: str) -> list[Exclusion]:
    """The lines of one exclusion file, as py3compile reads them."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        parts = line.split("|", 3)
        if len(parts) < 3:
            raise ValueError(f"not an exclusion line: {line!r}")
        kind, vrange, dname = parts[:3]
        pattern = parts[3] if len(parts) == 4 else ".*"
        if kind != "file":
            dname = dname.rstrip("/") + "/"
        out.append(Exclusion(kind, parse_vrange(vrange), dname, re.compile(pattern)))
    return out


def exclusions_for(directory: str, every: Iterable[Exclusion], version: Version) -> list[Exclusion]:
    """The exclusions py3compile applies to `directory` (get_exclude_patterns)."""
    directory = directory.rstrip("/") + "/"
    return [
        e
        for e in every
        if e.dname.startswith(directory[: len(e.dname)]) and in_range(version, e.versions)
    ]


def excluded(path: str, patterns: Iterable[Exclusion]) -> bool:
    for e in patterns:
        if not path.startswith(e.dname):
            continue
        rel = path[len(e.dname) :]
        if e.kind == "dir" or (e.kind == "file" and path == e.dname):
            return True
        if e.kind == "re" and e.pattern and (e.pattern.match(path) or e.pattern.match(rel)):
            return True
    return False


def public(path: str, version: Version) -> bool:
    """py3compile's filter_public: a module in python3's or python3.X's dist-packages."""
    match = PUBLIC_DIR_RE.match(path)
    return match is not None and match.group(1) in (f"{version[0]}", f"{version[0]}.{version[1]}")


def parse_postinst(text: str) -> tuple[list[Call], list[list[str]]]:
    """Its py3compile lines: those read here, and the argv of those left to py3compile."""
    calls: list[Call] = []
    other: list[list[str]] = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "py3compile":
            continue
        if "$" in line or "`" in line:
            other.append(["sh", "-c", line.strip()])
            continue
        argv = shlex.split(line.strip())
        if len(argv) >= 3 and argv[1] == "-p" and not any(a.startswith("-") for a in argv[2:]):
            calls.append(Call(argv[2], tuple(argv[3:])))
        else:
            other.append(argv)
    return calls, other


def files_to_compile(
    call: Call, listed: Sequence[str], every: Sequence[Exclusion], version: Version
) -> list[str]:
    """What `py3compile -p PACKAGE [DIR...]` compiles, from the package's file list."""
    modules = [f for f in listed if f.endswith(".py")]
    if not call.dirs:
        keep = exclusions_for("/", every, version)
        return [f for f in modules if public(f, version) and not excluded(f, keep)]
    out: list[str] = []
    for directory in call.dirs:
        keep = exclusions_for(directory, every, version)
        out += [f for f in modules if f.startswith(directory) and not excluded(f, keep)]
    return out


def dpkg_versions(status: str) -> dict[str, str]:
    """Installed package -> version, from a dpkg status file."""
    out: dict[str, str] = {}
    for stanza in status.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            out[fields["Package"]] = fields.get("Version", "")
    return out


def default_python(defaults: str) -> str:
    """`python3.X` from /usr/share/python3/debian_defaults."""
    match = re.search(r"^default-version\s*=\s*(python3\.\d+)\s*$", defaults, re.M)
    if not match:
        raise ValueError("no default-version in debian_defaults")
    return match.group(1)


def upstream(version: str) -> str:
    """A Debian version's upstream part: '3.11.2-6+deb12u8' -> '3.11.2'."""
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


def host_compiler(root: Path, python: str, candidates: Iterable[str] = ()) -> Path | None:
    """A host interpreter that compiles as the tree's own `python` (python3.X) would, else None.

    The same Python release (the upstream part of the tree's python3.X-minimal version) and the
    same magic number as the tree's own stdlib .pyc files (its postinst compiled them under
    qemu-user): the magic changes with every change of the bytecode's format. The Debian
    revision may differ (this host's 3.11.2-6+deb12u6, the mirror's +deb12u8: security fixes
    to the library); bench/README.md's comparison of two whole trees is what shows the .pyc
    files equal.
    """
    release = upstream(
        dpkg_versions((root / "var/lib/dpkg/status").read_text()).get(f"{python}-minimal", "")
    )
    tag = "cpython-" + python[6:].replace(".", "")
    try:
        magic = (root / f"usr/lib/{python}/__pycache__/os.{tag}.pyc").read_bytes()[:4]
    except OSError:
        return None
    for binary in dict.fromkeys([f"/usr/bin/{python}", *candidates, shutil.which(python) or ""]):
        if not binary or not os.access(binary, os.X_OK):
            continue
        probe = subprocess.run(
            [binary, "-E", "-s", "-c", PROBE], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0 and probe.stdout.split() == [release, magic.hex()]:
            return Path(binary)
    return None


def package_list(root: Path, package: str) -> list[str]:
    """`dpkg -L PACKAGE` in the tree: PACKAGE may name its arch or not, whatever the file's name
    says (a Multi-Arch: same package's list is `NAME:ARCH.list`, any other's `NAME.list`)."""
    info = root / "var/lib/dpkg/info"
    base = package.split(":", 1)[0]
    names = [package, base, *(p.stem for p in sorted(info.glob(f"{base}:*.list")))]
    for name in names:
        path = info / f"{name}.list"
        if path.exists():
            return path.read_text().splitlines()
    raise FileNotFoundError(f"{root}: no dpkg file list for {package}")


def in_tree(root: Path, path: str) -> Path:
    """`path` as the chroot sees it: symlinks followed inside `root`, never into the host."""
    parts = [p for p in path.split("/") if p]
    done: list[str] = []
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            done = done[:-1]
            continue
        if part == ".":
            continue
        here = root.joinpath(*done, part)
        if here.is_symlink():
            hops += 1
            if hops > 40:
                raise OSError(f"{root}: too many symlinks in {path}")
            target = os.readlink(here)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p] + parts
            continue
        done.append(part)
    return root.joinpath(*done)


def job_line(root: Path, name: str, tag: str) -> str:
    """The worker's line for in-tree `name`: where to read, where to write, what to record."""
    if any(c in name for c in "\t\n"):
        raise ValueError(f"{name!r}: a tab or newline in a module's name")
    directory, base = name.rsplit("/", 1)
    cfile = in_tree(root, directory) / "__pycache__" / f"{base[:-3]}.{tag}.pyc"
    return f"{in_tree(root, name)}\t{cfile}\t{name}\n"


def compile_on_host(python: Path, root: Path, files: Sequence[str], tag: str, workers: int) -> None:
    """Every file at once: one interpreter per core, each given every n-th file."""
    lines = [job_line(root, f, tag) for f in files]
    procs = []
    for i in range(workers):
        # A file, not a pipe: each worker reads its whole list at its own pace.
        with tempfile.TemporaryFile("w+") as chunk:
            chunk.write("".join(lines[i::workers]))
            chunk.seek(0)
            procs.append(subprocess.Popen([str(python), "-E", "-s", "-c", WORKER], stdin=chunk))
    failed = [proc.wait() for proc in procs]
    if any(failed):
        raise SystemExit(f"byte-compiling {root} on the host failed (exit {max(failed)})")


def calls_of(root: Path) -> tuple[list[Call], list[list[str]]]:
    calls: list[Call] = []
    other: list[list[str]] = []
    for postinst in sorted((root / "var/lib/dpkg/info").glob("*.postinst")):
        read, left = parse_postinst(postinst.read_text(errors="replace"))
        calls += read
        other += left
    return calls, other


def compile_tree(root: Path, candidates: Iterable[str] = ()) -> int:
    """Compile what the tree's py3compile lines would have; returns how many on the host."""
    bcep = root / BCEP_DIR
    (bcep / BCEP_FILE).unlink()  # py3compile's own list, as without this script
    if not any(bcep.iterdir()):
        bcep.rmdir()  # no package ships it: the essential hook made it for BCEP_FILE alone
    calls, other = calls_of(root)
    # The python3.X the tree's py3compile runs, read once (no py3compile line: not needed).
    name = default_python((root / DEBIAN_DEFAULTS).read_text()) if calls else ""
    python = host_compiler(root, name, candidates) if name else None
    if python is None:  # not the tree's compiler: leave it all to the tree's py3compile
        other = [["py3compile", "-p", c.package, *c.dirs] for c in calls] + other
        calls = []
    todo: list[str] = []
    if python is not None:
        major, minor = name.removeprefix("python").split(".")
        version = (int(major), int(minor))
        every: list[Exclusion] = []
        for path in sorted(bcep.glob("*")) if bcep.is_dir() else ():
            if not path.name.startswith("."):
                every += parse_bcep(path.read_text())
        for call in calls:
            todo += files_to_compile(call, package_list(root, call.package), every, version)
        todo = list(dict.fromkeys(todo))
        compile_on_host(python, root, todo, f"cpython-{major}{minor}", os.cpu_count() or 1)
    for cmd in other:  # under qemu-user, as the postinst would have run it
        subprocess.run(["chroot", str(root), *cmd], check=True)
    return len(todo)


def main(argv: Sequence[str]) -> int:
    count = compile_tree(Path(argv[0]))
    print(f"netroot: {count} Python modules byte-compiled on the host", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
