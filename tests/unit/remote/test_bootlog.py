"""netroot.remote.bootlog: a diskless board's newest boot step from dnsmasq's own log lines
(captured from dnsmasq 2.90 run by tests/integration/netboot: proxy-DHCP for a Pi ROM's
DISCOVER, DHCP with addresses for a udhcpc client, TFTP), and its NFS connection from a
/proc/net/tcp table."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from netroot import bundle
from netroot.remote import bootlog

ROOT = "/tmp/pytest-of-root/pytest-328/test_dump0/tftp"
MAC, STRANGER, ADDRESS = "b8:27:eb:12:34:56", "b8:27:eb:99:99:99", "10.213.7.50"
BOARDS = [{"name": "pi-01", "mac": MAC.upper(), "address": ADDRESS},
          {"name": "pi-02", "mac": "b8:27:eb:00:00:02", "address": "10.213.7.51"}]  # fmt: skip

# Oldest first, as dnsmasq writes them.
# dnsmasq ends some lines with a space (kept: {SP}).
SP = " "
LOG = f"""\
Dec  7 17:11:21 dnsmasq[6511]: started, version 2.90 DNS disabled
Dec  7 17:11:21 dnsmasq-dhcp[6511]: DHCP, proxy on subnet 10.213.7.0
Dec  7 17:11:21 dnsmasq-tftp[6511]: TFTP root is {ROOT}{SP}{SP}
Dec  7 17:11:21 dnsmasq-dhcp[6511]: 2851485622 available DHCP subnet: 10.213.7.0/255.255.255.0
Dec  7 17:11:21 dnsmasq-dhcp[6511]: 2851485622 vendor class: PXEClient:Arch:00000:UNDI:002001
Dec  7 17:11:21 dnsmasq-dhcp[6511]: 2851485622 PXE(nb-srv) {MAC} proxy
Dec  7 17:11:21 dnsmasq-dhcp[6511]: 2851485622 tags: netroot_board, known, nb-srv
Dec  7 17:11:22 dnsmasq-dhcp[6511]: 2851485622 sent size:  1 option: 53 message-type  2
Dec  7 17:11:22 dnsmasq-dhcp[6511]: 722500540 PXE(nb-srv) b8:27:eb:99:99:99 proxy-ignored
Dec  7 17:11:25 dnsmasq-tftp[6511]: sent {ROOT}/bootcode.bin to 10.213.7.50
Dec  7 17:11:25 dnsmasq-tftp[6511]: sent {ROOT}/1a2b3c4d/start.elf to 10.213.7.50
Dec  7 17:11:25 dnsmasq-tftp[6511]: sent {ROOT}/1a2b3c4d/cmdline.txt to 10.213.7.50
Dec  7 17:11:25 dnsmasq-tftp[6511]: file {ROOT}/1a2b3c4d/nosuch not found for 10.213.7.50
Dec  7 17:11:49 dnsmasq-dhcp[17598]: 1098288446 DHCPDISCOVER(nb-srv) {MAC}{SP}
Dec  7 17:11:50 dnsmasq-dhcp[17598]: 1098288446 DHCPOFFER(nb-srv) 10.213.7.50 {MAC}{SP}
Dec  7 17:11:50 dnsmasq-dhcp[17598]: 1098288446 bootfile name: 1a2b3c4d/pxelinux.0
Dec  7 17:11:50 dnsmasq-dhcp[17598]: 1098288446 DHCPREQUEST(nb-srv) 10.213.7.50 {MAC}{SP}
Dec  7 17:11:50 dnsmasq-dhcp[17598]: 1098288446 DHCPACK(nb-srv) 10.213.7.50 {MAC}{SP}
Dec  7 17:11:50 dnsmasq-dhcp[17598]: 1098288446 sent size:  1 option: 53 message-type  5
"""
NOW = time.mktime(time.strptime("2026 Dec 7 18:00:00", "%Y %b %d %H:%M:%S"))


def _steps(text: str) -> dict[str, dict[str, object]]:
    lines = reversed(text.splitlines())
    return bootlog.last_steps(lines, BOARDS, ROOT, NOW)


def test_each_kind_of_line_parses_to_its_step() -> None:
    lines = LOG.splitlines()
    assert bootlog.parse_line(lines[5], ROOT) == ("Dec  7 17:11:21", "PXE", MAC, "proxy")
    assert bootlog.parse_line(lines[8]) is None  # a client dnsmasq ignores
    assert bootlog.parse_line(lines[10], ROOT) == (
        "Dec  7 17:11:25",
        "tftp-sent",
        ADDRESS,
        "1a2b3c4d/start.elf",
    )
    assert bootlog.parse_line(lines[12], ROOT)[1:] == (  # type: ignore[index]
        "tftp-missing",
        ADDRESS,
        "1a2b3c4d/nosuch",
    )
    assert bootlog.parse_line(lines[13])[1:] == ("DHCPDISCOVER", MAC, "")  # type: ignore[index]
    assert bootlog.parse_line(lines[17])[1:] == ("DHCPACK", MAC, ADDRESS)  # type: ignore[index]
    for noise in (0, 1, 2, 3, 7, 15, 18):  # startup, options, bootfile: no boot step
        assert bootlog.parse_line(lines[noise], ROOT) is None, lines[noise]


def test_the_newest_step_wins_by_mac_or_by_address() -> None:
    found = _steps(LOG)
    assert set(found) == {"pi-01"}  # pi-02 has no line
    ack = found["pi-01"]
    assert ack["event"] == "DHCPACK" and ack["detail"] == ADDRESS
    assert ack["time"] == NOW - 3600 + 11 * 60 + 50  # 17:11:50 on the server's clock
    upto_tftp = "\n".join(LOG.splitlines()[:12])  # the log as it was after cmdline.txt
    assert _steps(upto_tftp)["pi-01"]["event"] == "tftp-sent"
    assert _steps(upto_tftp)["pi-01"]["detail"] == "1a2b3c4d/cmdline.txt"


def test_a_stamp_from_the_future_is_last_years() -> None:
    new_year = time.mktime(time.strptime("2027 Jan 1 00:10:00", "%Y %b %d %H:%M:%S"))
    when = bootlog.stamp_time("Dec 31 23:59:00", new_year)
    assert when == time.mktime(time.strptime("2026 Dec 31 23:59:00", "%Y %b %d %H:%M:%S"))
    assert bootlog.stamp_time("Xyz 31 23:59:00", new_year) is None


def test_the_log_is_read_backwards_and_stops_at_the_budget(tmp_path: Path) -> None:
    log = tmp_path / "dnsmasq.log"
    lines = LOG.splitlines()
    log.write_text("\n".join(lines[:12]) + "\n")
    (tmp_path / "dnsmasq.log.1").write_text("older\n")
    got = list(bootlog.newest_lines(log, 1 << 20))
    assert got == [*reversed(lines[:12]), "older"]
    last = len(lines[11].encode()) + 1
    assert list(bootlog.newest_lines(log, last)) == [lines[11]]
    assert list(bootlog.newest_lines(log, last + 5)) == [lines[11]]  # a cut line is not read
    # many chunks: a line across a chunk's edge comes out whole
    log.write_text("".join(f"{i:07d} {'x' * 50}\n" for i in range(5000)))
    every = list(bootlog.newest_lines(log, 1 << 20))
    assert every[:-1] == [f"{i:07d} {'x' * 50}" for i in reversed(range(5000))]


def test_reading_stops_once_every_board_has_a_step() -> None:
    read = []

    def lines() -> object:
        for line in reversed(LOG.splitlines()):
            read.append(line)
            yield line

    boards = BOARDS[:1]
    assert bootlog.last_steps(lines(), boards, ROOT, NOW)["pi-01"]["event"] == "DHCPACK"  # type: ignore[arg-type]
    assert len(read) == 2  # the ACK is the second line from the end


# /proc/net/tcp and tcp6 as Linux writes them: a listener, pi-01's established connection to
# 2049 (IPv4, and IPv4-mapped on tcp6), another board's to ssh, a TIME_WAIT one to 2049.
TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0801 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0107D50A:0801 3207D50A:03FF 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0107D50A:0016 3307D50A:A000 01 00000000:00000000 00:00000000 00000000     0        0 3 1
   3: 0107D50A:0801 3407D50A:03FE 06 00000000:00000000 00:00000000 00000000     0        0 0 3
"""
TCP6 = """\
  sl  local_address                         remote_address                        st
   0: 0000000000000000FFFF00000107D50A:0801 0000000000000000FFFF00003507D50A:0300 01 0 0
   1: 00000000000000000000000001000000:0801 00000000000000000000000001000000:0300 01 0 0
"""


def test_nfs_peers_are_the_established_connections_to_port_2049(tmp_path: Path) -> None:
    (tmp_path / "tcp").write_text(TCP)
    (tmp_path / "tcp6").write_text(TCP6)
    assert bootlog.nfs_peers(tmp_path) == {"10.213.7.50", "10.213.7.53"}
    (tmp_path / "tcp6").unlink()
    assert bootlog.nfs_peers(tmp_path) == {"10.213.7.50"}


def test_the_program_answers_one_request(tmp_path: Path) -> None:
    """The program netroot sends (bundle.server_program) in a bare python3."""
    log = tmp_path / "dnsmasq.log"
    log.write_text(LOG)
    program = tmp_path / "bootlog.py"
    program.write_text(bundle.server_program("netroot.remote.bootlog"))
    request = {"log": str(log), "tftp_root": ROOT, "boards": BOARDS}
    proc = subprocess.run([sys.executable, "-I", str(program)], input=json.dumps(request),
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    reply = json.loads(proc.stdout)
    assert reply["ok"] and reply["boards"]["pi-01"]["event"] == "DHCPACK"
    assert reply["boards"]["pi-02"] == {"nfs": False, "nfs_time": None}
    bad = subprocess.run([sys.executable, "-I", str(program)], input='{"log": "rel", "boards": []}',
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert bad.returncode == 1 and "not an absolute path" in json.loads(bad.stdout)["error"]


# `ss -H -t -i -n state established '( sport = :2049 )'` (iproute2 6.1) on a server: pi-01's
# two connections (IPv4-mapped, as Ganesha's IPv6 socket shows them, and IPv4), each with its
# tcp_info line; the newest traffic wins.
SS = """\
0      0      [::ffff:10.213.7.1]:2049  [::ffff:10.213.7.50]:1013
\t cubic wscale:7,7 rto:204 rtt:0.5/0.25 mss:1448 lastsnd:4000 lastrcv:4200 lastack:4000
0      0      10.213.7.1:2049  10.213.7.50:1015
\t cubic wscale:7,7 rto:204 rtt:0.5/0.25 mss:1448 lastsnd:900 lastrcv:1500 lastack:900
0      0      10.213.7.1:2049  10.213.7.53:700
\t cubic wscale:7,7 rto:204 rtt:0.5/0.25 mss:1448 lastsnd:60000 lastrcv:61000 lastack:60000
"""


def test_ss_gives_each_nfs_peer_its_last_traffic() -> None:
    assert bootlog.parse_ss(SS, 1000.0) == {"10.213.7.50": 998.5, "10.213.7.53": 939.0}
    assert bootlog.parse_ss("", 1000.0) == {}
