"""Where diskless boards are in their boot, from the NFS server's own records (the server side).

Read-only. netroot sends it in the ssh command line (netroot.bundle.helper_command) when
`status` finds a diskless board unreachable, with one JSON request on stdin:

    {"log": "/var/log/netroot-dnsmasq.log", "tftp_root": "/srv/netroot-tftp",
     "max_bytes": 4194304, "boards": [{"name": "nb-01", "mac": "...", "address": "10.77.0.20"}]}

and prints one JSON line: {"ok": true, "boards": {name: {"event", "detail", "time", "nfs",
"nfs_time"}}, "log_exists": bool}.

Two sources, both the server's own:
- dnsmasq's log (the role runs it with log-dhcp and --log-facility=FILE; each TFTP file sent is
  logged too): every board's newest line, found by its MAC (DHCP and PXE lines) or its address
  (TFTP lines). The log is read backwards from its end, and then its rotated part (`.1`,
  logrotate's), only until every board asked about has a line or `max_bytes` are read: the
  cost grows with the lines written since the boards' last boot steps, not with the log.
- the NFS server's sockets: whether the board holds an established TCP connection to port 2049
  now, and when data last came in on it (`ss -ti`'s lastrcv, from the kernel's tcp_info; the
  socket table /proc/net/tcp, without that time, where there is no `ss`). Neither Ganesha nor
  nfsd logs a mount at the levels the role sets, so the connection is what the server can tell
  of the board's root mount. Its time matters: a board power-cycled mid-boot sends no FIN, and
  the server keeps its earlier boot's connection open; only traffic after the board's last
  DHCP/TFTP step is this boot's.

dnsmasq stamps its lines in the server's local time without a year ("Dec  7 17:42:03"): they
are turned into epoch seconds here, on the server, in its time zone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

MAX_BYTES = 4 << 20  # a boot writes about 10 KiB of log-dhcp and TFTP lines: ~400 boots
CHUNK = 64 << 10
NFS_PORT = 2049

_LINE = re.compile(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d) dnsmasq(?:-(dhcp|tftp))?\[\d+\]: (.*)$")
# "1098288446 DHCPACK(nb-srv) 10.213.7.50 b8:27:eb:12:34:56 " (the leading number is the
# exchange's id, with log-dhcp); DISCOVER and PXE lines may have no address.
_DHCP = re.compile(
    r"^(?:\d+ )?(DHCPDISCOVER|DHCPOFFER|DHCPREQUEST|DHCPACK|DHCPNAK|DHCPDECLINE|DHCPRELEASE"
    r"|DHCPINFORM|PXE)\([^)]*\) (?:(\d+\.\d+\.\d+\.\d+) )?([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5})"
    r"(?: (.*))?$"
)
_TFTP = (
    ("tftp-sent", re.compile(r"^sent (.+) to (\S+)$")),
    ("tftp-missing", re.compile(r"^file (.+) not found for (\S+)$")),
    ("tftp-failed", re.compile(r"^failed sending (.+) to (\S+)$")),
    ("tftp-error", re.compile(r"^(error \d+ .*) received from (\S+)$")),
)


def stamp_time(stamp: str, now: float) -> float | None:
    """A syslog-style stamp ("Dec  7 17:42:03", this host's local time, no year) as epoch
    seconds: this year's, or last year's when that would be in the future (a log read just
    after New Year). None when it is not such a stamp."""
    year = time.localtime(now).tm_year
    try:
        when = time.mktime(time.strptime(f"{year} {stamp}", "%Y %b %d %H:%M:%S"))
        if when > now + 86400:
            when = time.mktime(time.strptime(f"{year - 1} {stamp}", "%Y %b %d %H:%M:%S"))
    except ValueError:
        return None
    return when


def parse_line(line: str, tftp_root: str = "") -> tuple[str, str, str, str] | None:
    """(stamp, event, who, detail) of one dnsmasq line about a board, None for any other.

    who: a MAC (lower case) for DHCP/PXE lines, an address for TFTP lines. event: the DHCP
    message (DHCPACK, PXE, ...) or tftp-sent/-missing/-failed/-error; detail: the address
    handed out (DHCP) or the file relative to the TFTP root (TFTP)."""
    m = _LINE.match(line.rstrip("\n"))
    if not m:
        return None
    stamp, facility, text = m.groups()
    if facility == "dhcp":
        d = _DHCP.match(text)
        if not d or (d.group(4) or "").strip().endswith("ignored"):
            return None  # a client dnsmasq ignores is no board of the inventory's
        message, address, mac, rest = d.groups()
        detail = " ".join(x for x in (address or "", (rest or "").strip()) if x)
        return stamp, message, mac.lower(), detail
    if facility == "tftp":
        for event, pattern in _TFTP:
            t = pattern.match(text)
            if t:
                name, who = t.groups()
                root = tftp_root.rstrip("/") + "/"
                if tftp_root and name.startswith(root):
                    name = name[len(root) :]
                return stamp, event, who, name
    return None


def lines_backwards(path: Path, budget: int) -> Iterator[str]:
    """`path`'s lines, newest first, reading at most `budget` bytes from its end (a line cut
    by the budget is not yielded). No file: nothing."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        end = fh.seek(0, os.SEEK_END)
        start = max(0, end - budget)
        whole = start == 0  # the first line read is whole only where a line ends before it
        if not whole:
            fh.seek(start - 1)
            whole = fh.read(1) == b"\n"
        pos, tail = end, b""
        while pos > start:
            step = min(CHUNK, pos - start)
            pos -= step
            fh.seek(pos)
            block = fh.read(step) + tail
            parts = block.split(b"\n")
            tail = parts[0]  # may be the end of an earlier line: kept for the next block
            for raw in reversed(parts[1:]):
                if raw:
                    yield raw.decode(errors="replace")
        if whole and tail:
            yield tail.decode(errors="replace")


def newest_lines(log: Path, budget: int) -> Iterator[str]:
    """The log's lines newest first, then its rotated part's (`.1`), within `budget` bytes."""
    used = 0
    for part in (log, log.with_name(log.name + ".1")):
        for line in lines_backwards(part, budget - used):
            used += len(line.encode()) + 1
            yield line
        if used >= budget:
            return


def last_steps(
    lines: Iterable[str], boards: list[dict[str, str]], tftp_root: str, now: float
) -> dict[str, dict[str, Any]]:
    """Each board's newest boot step in `lines` (newest first): board -> event, detail, time.
    Stops reading once every board has one."""
    by_mac = {b["mac"].lower(): b["name"] for b in boards if b.get("mac")}
    by_address = {b["address"]: b["name"] for b in boards if b.get("address")}
    found: dict[str, dict[str, Any]] = {}
    for line in lines:
        parsed = parse_line(line, tftp_root)
        if parsed is None:
            continue
        stamp, event, who, detail = parsed
        name = by_mac.get(who) or by_address.get(who)
        if name is None or name in found:
            continue
        found[name] = {"event": event, "detail": detail, "time": stamp_time(stamp, now)}
        if len(found) == len(boards):
            break
    return found


def _address_v4(hexaddr: str) -> str:
    """/proc/net/tcp's address (little-endian hex; tcp6's IPv4-mapped ones too) as a.b.c.d."""
    word = hexaddr[-8:]  # IPv4, or the last 32-bit word of an IPv4-mapped IPv6 address
    if len(hexaddr) == 32 and hexaddr[:24] != "0000000000000000FFFF0000":
        return ""  # a real IPv6 peer: the inventory's addresses are IPv4
    return ".".join(str(int(word[i : i + 2], 16)) for i in (6, 4, 2, 0))


def nfs_peers(proc_net: Path = Path("/proc/net")) -> set[str]:
    """The IPv4 addresses holding an established TCP connection to this host's NFS port."""
    peers: set[str] = set()
    for name in ("tcp", "tcp6"):
        try:
            rows = (proc_net / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) < 4 or fields[3] != "01":  # 01: ESTABLISHED
                continue
            local, remote = fields[1], fields[2]
            if int(local.rpartition(":")[2], 16) == NFS_PORT:
                address = _address_v4(remote.rpartition(":")[0])
                if address:
                    peers.add(address)
    return peers


SS = ("/usr/bin/ss", "/bin/ss", "/usr/sbin/ss", "/sbin/ss")
_LASTRCV = re.compile(r"\blastrcv:(\d+)")


def parse_ss(text: str, now: float) -> dict[str, float]:
    """`ss -H -t -i -n state established ( sport = :2049 )`'s output: peer address -> when data
    last came in from it (the newest of its connections), in epoch seconds."""
    found: dict[str, float] = {}
    peer = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():  # "Recv-Q Send-Q local:port peer:port": a socket
            fields = line.split()
            address = fields[3].rpartition(":")[0] if len(fields) >= 4 else ""
            peer = address.strip("[]").removeprefix("::ffff:")
            continue
        last = _LASTRCV.search(line)  # its tcp_info, on the next (indented) line
        if peer and last:
            when = now - int(last.group(1)) / 1000
            found[peer] = max(when, found.get(peer, when))
    return found


def nfs_connections(now: float, proc_net: Path = Path("/proc/net")) -> dict[str, float | None]:
    """The peers holding an established connection to the NFS port -> when data last came
    in from each (None: this host has no `ss`, only /proc/net/tcp says they are there)."""
    ss = next((p for p in SS if os.access(p, os.X_OK)), None) or shutil.which("ss")
    if ss:
        argv = [ss, "-H", "-t", "-i", "-n", "state", "established", f"( sport = :{NFS_PORT} )"]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired):
            proc = None
        if proc is not None and proc.returncode == 0:
            return dict(parse_ss(proc.stdout, now))
    return dict.fromkeys(nfs_peers(proc_net))


def answer(request: Any, now: float, proc_net: Path = Path("/proc/net")) -> dict[str, Any]:
    """The reply to one request (module docstring); a malformed request: ok false, why."""
    if not isinstance(request, dict) or not isinstance(request.get("boards"), list):
        return {"ok": False, "error": "request: expected {'log': ..., 'boards': [...]}"}
    log, root = request.get("log"), request.get("tftp_root", "")
    if not isinstance(log, str) or not log.startswith("/") or not isinstance(root, str):
        return {"ok": False, "error": f"request: log {log!r} is not an absolute path"}
    boards = [
        b for b in request["boards"] if isinstance(b, dict) and isinstance(b.get("name"), str)
    ]
    budget = request.get("max_bytes", MAX_BYTES)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        return {"ok": False, "error": f"request: max_bytes {budget!r} is not a positive integer"}
    try:
        steps = last_steps(newest_lines(Path(log), budget), boards, root, now)
    except OSError as exc:
        return {"ok": False, "error": f"{log}: {exc.strerror or exc}"}
    peers = nfs_connections(now, proc_net)
    reply = {
        b["name"]: {
            **steps.get(b["name"], {}),
            "nfs": b.get("address", "") in peers,
            "nfs_time": peers.get(b.get("address", "")),
        }
        for b in boards
    }
    return {"ok": True, "boards": reply, "log_exists": Path(log).exists()}


def main(argv: list[str]) -> int:
    try:
        request = json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        print(json.dumps({"ok": False, "error": f"request is not JSON: {exc}"}))
        return 1
    reply = answer(request, time.time())
    print(json.dumps(reply))
    return 0 if reply["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
