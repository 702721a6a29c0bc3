"""Validate an /etc/exports or ganesha.conf before it is applied (pure, stdlib only).

The server role installs it on the NFS server as `netroot-nfs-check` (one file, made by
netroot.bundle.server_program) and runs that as the `validate` step of the task that writes the
file: Ansible writes the candidate to a temporary file, runs
`netroot-nfs-check exports|ganesha FILE`, and only moves it into place when it exits 0, so a bad
file is never applied and the server keeps serving what it served. netroot's dry run imports
the same functions.

Syntax is checked for the whole file; the netroot policy (read-only, listed clients, never `*`)
only inside netroot's marked block, because lines outside it belong to the administrator.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

BEGIN = "# BEGIN netroot managed block"
END = "# END netroot managed block"

# exports(5) options netroot or an administrator may reasonably write.
EXPORT_OPTIONS = set(
    [
        "ro",
        "rw",
        "sync",
        "async",
        "secure",
        "insecure",
        "wdelay",
        "no_wdelay",
        "hide",
        "nohide",
        "crossmnt",
        "subtree_check",
        "no_subtree_check",
        "insecure_locks",
        "secure_locks",
        "no_auth_nlm",
        "auth_nlm",
        "root_squash",
        "no_root_squash",
        "all_squash",
        "no_all_squash",
        "mountpoint",
        "mp",
        "pnfs",
        "no_pnfs",
        "security_label",
        "nordirplus",
    ]
)
EXPORT_VALUED = {"fsid", "sec", "anonuid", "anongid", "refer", "replicas", "mountpoint", "mp"}
CLIENT_RE = re.compile(r"^(?P<client>[^()\s]+)?(?:\((?P<opts>[^()]*)\))?$")
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}$")


@dataclass(frozen=True)
class Problem:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def _block_lines(lines: list[str]) -> tuple[set[int], list[Problem]]:
    """Line numbers (1-based) inside netroot's marked block, and marker problems."""
    inside: set[int] = set()
    problems: list[Problem] = []
    start = None
    for no, line in enumerate(lines, 1):
        if line.strip().startswith(BEGIN):
            if start is not None:
                problems.append(Problem(no, "second BEGIN marker inside the netroot block"))
            start = no
        elif line.strip().startswith(END):
            if start is None:
                problems.append(Problem(no, "END marker without BEGIN"))
            start = None
        elif start is not None:
            inside.add(no)
    if start is not None:
        problems.append(Problem(start, "BEGIN marker without END"))
    return inside, problems


def _logical_lines(lines: list[str]) -> list[tuple[int, str]]:
    """Join backslash continuations; drop comments and blank lines (exports(5) rules)."""
    out: list[tuple[int, str]] = []
    buf, first = "", 0
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")
        if not buf:
            first = no
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        text = buf.split("#", 1)[0].strip() if not buf.lstrip().startswith('"') else buf.strip()
        if text:
            out.append((first, text))
        buf = ""
    return out


def _check_export_options(no: int, opts: str, managed: bool) -> list[Problem]:
    problems = []
    for opt in filter(None, opts.split(",")):
        name, _, value = opt.partition("=")
        if value and name not in EXPORT_VALUED:
            problems.append(Problem(no, f"option {name!r} takes no value"))
        elif not value and name not in EXPORT_OPTIONS:
            problems.append(Problem(no, f"unknown export option {opt!r}"))
        elif name == "fsid" and not (value.isdigit() or value == "root" or UUID_RE.match(value)):
            problems.append(Problem(no, f"fsid {value!r} is not a number, 'root' or a UUID"))
    if managed:
        names = {o.partition("=")[0] for o in opts.split(",")}
        if "rw" in names:
            problems.append(Problem(no, "netroot exports must be read-only (rw found)"))
        if "ro" not in names:
            problems.append(Problem(no, "netroot exports must say ro explicitly"))
        if "fsid" not in names:
            problems.append(Problem(no, "netroot exports need a fixed fsid"))
    return problems


def check_exports(text: str) -> list[Problem]:
    """Problems in an exports(5) file; netroot's policy is enforced inside its block."""
    lines = text.splitlines()
    managed, problems = _block_lines(lines)
    seen: dict[str, int] = {}
    for no, entry in _logical_lines(lines):
        is_managed = no in managed
        if entry.startswith('"'):
            end = entry.find('"', 1)
            if end < 0:
                problems.append(Problem(no, "unterminated quoted path"))
                continue
            path, rest = entry[1:end], entry[end + 1 :]
        else:
            path, _, rest = entry.replace("\t", " ").partition(" ")
        if not path.startswith("/"):
            problems.append(Problem(no, f"export path {path!r} is not absolute"))
            continue
        if path in seen:
            problems.append(Problem(no, f"{path} is already exported on line {seen[path]}"))
        seen[path] = no
        clients = rest.split()
        if is_managed and not clients:
            problems.append(Problem(no, f"{path}: no client listed"))
        for spec in clients:
            m = CLIENT_RE.match(spec)
            if not m:
                problems.append(Problem(no, f"cannot parse client {spec!r}"))
                continue
            client = m.group("client") or ""
            if is_managed and (not client or any(ch in client for ch in "*?[/@")):
                problems.append(
                    Problem(no, f"{path}: client {client or '(everyone)'!r} is not one address")
                )
            problems += _check_export_options(no, m.group("opts") or "", is_managed)
    return problems


_TOKEN_RE = re.compile(r'\s*(?:(#[^\n]*)|("(?:[^"\\]|\\.)*")|([{};=,])|([^\s{};=,"#]+))')


def _tokens(text: str) -> list[tuple[int, str]]:
    """(line, token) pairs of a ganesha config; comments dropped."""
    out: list[tuple[int, str]] = []
    pos = 0
    while text[pos:].strip():
        m = _TOKEN_RE.match(text, pos)
        if not m or m.lastindex is None:
            line = text.count("\n", 0, pos) + 1
            raise ValueError(f"line {line}: cannot read {text[pos : pos + 20].strip()!r}")
        if m.lastindex != 1:  # group 1 is a comment
            out.append((text.count("\n", 0, m.start(m.lastindex)) + 1, m.group(m.lastindex)))
        pos = m.end()
    return out


@dataclass
class _Block:
    name: str
    line: int
    params: dict[str, tuple[int, str]]
    children: list[_Block]


def _parse_ganesha(tokens: list[tuple[int, str]]) -> list[_Block]:
    root = _Block("", 0, {}, [])
    stack = [root]
    i = 0
    while i < len(tokens):
        line, tok = tokens[i]
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if tok == "}":
            if len(stack) == 1:
                raise ValueError(f"line {line}: '}}' without a block")
            stack.pop()
            i += 1
        elif nxt == "{":
            block = _Block(tok.upper(), line, {}, [])
            stack[-1].children.append(block)
            stack.append(block)
            i += 2
        elif tok.startswith("%"):
            i += 2  # %include "file"
        elif nxt == "=":
            j = i + 2
            value: list[str] = []
            while j < len(tokens) and tokens[j][1] not in (";", "}", "{"):
                value.append(tokens[j][1])
                j += 1
            if j >= len(tokens) or tokens[j][1] != ";":
                raise ValueError(f"line {line}: {tok} = ... must end with ';'")
            if not value:
                raise ValueError(f"line {line}: {tok} has no value")
            stack[-1].params[tok.lower()] = (line, "".join(value))
            i = j + 1
        else:
            raise ValueError(f"line {line}: unexpected {tok!r}")
    if len(stack) != 1:
        raise ValueError(f"line {stack[-1].line}: block {stack[-1].name} is never closed")
    return root.children


def check_ganesha(text: str) -> list[Problem]:
    """Problems in a ganesha.conf: syntax, EXPORT ids/paths/FSAL, and netroot's client policy."""
    managed, problems = _block_lines(text.splitlines())
    try:
        blocks = _parse_ganesha(_tokens(text))
    except ValueError as exc:
        no, _, msg = str(exc).partition(": ")
        return [*problems, Problem(int(no.split()[-1]), msg)]
    ids: dict[str, int] = {}
    for block in (b for b in blocks if b.name == "EXPORT"):
        params = block.params
        for key in ("export_id", "path"):
            if key not in params:
                problems.append(Problem(block.line, f"EXPORT has no {key}"))
        if "export_id" in params:
            line, value = params["export_id"]
            if not value.isdigit() or not 0 < int(value) < 65536:
                problems.append(Problem(line, f"Export_Id {value} is not in 1..65535"))
            elif value in ids:
                problems.append(Problem(line, f"Export_Id {value} is also on line {ids[value]}"))
            ids.setdefault(value, line)
        if "path" in params and not params["path"][1].strip('"').startswith("/"):
            problems.append(Problem(params["path"][0], "Path must be absolute"))
        if not any(c.name == "FSAL" and "name" in c.params for c in block.children):
            problems.append(Problem(block.line, "EXPORT has no FSAL { Name = ...; }"))
        if block.line in managed:
            problems += _check_managed_export(block)
    return problems


def _check_managed_export(block: _Block) -> list[Problem]:
    problems = []
    access = block.params.get("access_type", (block.line, "None"))
    if access[1].lower() != "none":
        problems.append(Problem(access[0], "netroot exports grant access only in CLIENT blocks"))
    clients = [c for c in block.children if c.name == "CLIENT"]
    if not clients:
        problems.append(Problem(block.line, "netroot EXPORT without a CLIENT block"))
    for client in clients:
        line, value = client.params.get("clients", (client.line, ""))
        names = [v.strip('"') for v in value.split(",") if v]
        if not names or any(any(ch in n for ch in "*?[/@") for n in names):
            problems.append(Problem(line, f"Clients = {value!r}: list single addresses only"))
        client_line, client_access = client.params.get("access_type", (client.line, ""))
        if client_access.lower() not in ("ro", "mdonly_ro"):
            problems.append(Problem(client_line, "netroot exports must be read-only (RO)"))
    return problems


# The formats it checks, by the name its command line takes (and netroot/nfskind.py's kinds).
CHECKS = {"exports": check_exports, "ganesha": check_ganesha}


def main(argv: list[str]) -> int:
    """`netroot-nfs-check exports|ganesha FILE` (argv: the arguments after the program name):
    print problems, exit 1 if any; 2 for a wrong call or a file it cannot read."""
    if len(argv) != 2 or argv[0] not in CHECKS:
        print("usage: netroot-nfs-check exports|ganesha FILE", file=sys.stderr)
        return 2
    kind, name = argv
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"netroot-nfs-check: cannot read {name}: {exc}", file=sys.stderr)
        return 2
    problems = CHECKS[kind](text)
    for problem in problems:
        print(f"{name}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
