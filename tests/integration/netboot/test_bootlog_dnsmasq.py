"""A diskless board's boot stage from a real dnsmasq's log: netroot's dnsmasq config in the
network namespaces test_pi3b_rom makes, a DISCOVER shaped like the 3B ROM's, then its files
over TFTP, then a TCP connection to the server's NFS port; after each step the program
`status` sends to the server (netroot.remote.bootlog, as netroot.bundle makes it), run in the
server's namespace, names that step.

No traffic leaves the namespaces (test_pi3b_rom's docstring).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netroot import bundle
from netroot.netboot.bootstep import BootStep, parse_reply
from tests.integration.netboot.test_pi3b_rom import (  # the fixtures, and what they serve
    BOARD_ADDRESS,
    FILES,
    MAC,
    SERIAL,
    SERVER,
    Server,
    netns,  # noqa: F401
    server,  # noqa: F401
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("dnsmasq") is None, reason="dnsmasq not installed (.ci/setup)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]


def _stage(srv: Server, tmp_path: Path) -> dict[str, object]:
    program = tmp_path / "bootlog.py"
    program.write_text(bundle.server_program("netroot.remote.bootlog"))
    request = {
        "log": str(srv.log),
        "tftp_root": str(srv.tftp),
        "boards": [{"name": "pi-01", "mac": MAC, "address": BOARD_ADDRESS}],
    }
    proc = subprocess.run(
        ["ip", "netns", "exec", srv.ns.server, sys.executable, "-I", str(program)],
        input=json.dumps(request), capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reply = json.loads(proc.stdout)
    assert reply["ok"], reply
    step: dict[str, object] = reply["boards"]["pi-01"]
    return step


def test_each_boot_step_is_named_from_the_servers_own_records(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    assert _stage(server, tmp_path) == {"nfs": False, "nfs_time": None}  # nothing yet
    started = time.time()
    assert server.discover(MAC, wait=20) is not None
    step = _stage(server, tmp_path)
    assert (step["event"], step["detail"], step["nfs"]) == ("PXE", "proxy", False)
    assert isinstance(step["time"], float) and started - 2 <= step["time"] <= time.time() + 1

    server.fetch("bootcode.bin", *(f"{SERIAL}/{f}" for f in FILES))
    step = _stage(server, tmp_path)
    assert (step["event"], step["detail"]) == ("tftp-sent", f"{SERIAL}/{FILES[-1]}")
    with pytest.raises(subprocess.CalledProcessError):
        server.fetch(f"{SERIAL}/kernel8.img")  # not in its directory
    step = _stage(server, tmp_path)
    assert (step["event"], step["detail"]) == ("tftp-missing", f"{SERIAL}/kernel8.img")

    # Its root mount: a TCP connection from the board's address to the server's NFS port, data
    # sent on it a second or more after the last step (dnsmasq's stamps are whole seconds).
    listener = subprocess.Popen(
        ["ip", "netns", "exec", server.ns.server, sys.executable, "-c",
         "import socket,time\ns=socket.create_server(('', 2049))\nc=s.accept()[0]\n"
         "c.recv(1)\ntime.sleep(60)"],
    )  # fmt: skip
    client = None
    try:
        time.sleep(1.2)
        connect = (
            f"import socket,time\nwhile True:\n try:\n  s=socket.create_connection("
            f"('{SERVER}', 2049)); break\n except OSError: time.sleep(0.2)\n"
            "s.sendall(b'x')\nprint('up', flush=True)\ntime.sleep(60)"
        )
        client = subprocess.Popen(
            ["ip", "netns", "exec", server.ns.rom, sys.executable, "-c", connect],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert client.stdout is not None and client.stdout.readline() == "up\n"
        time.sleep(0.3)  # the byte reaches the listener's socket
        step = _stage(server, tmp_path)
        assert step["nfs"] is True and step["event"] == "tftp-missing"
        mounted = _boot_step(step)
        assert mounted.stage == "nfs" and mounted.describe().startswith("nfs: root mounted")
        # A later boot step with no NFS traffic after it: the open connection is an earlier
        # boot's (a board power-cycled mid-boot sends no FIN).
        time.sleep(1.2)
        server.fetch("bootcode.bin")
        later = _boot_step(_stage(server, tmp_path))
        assert later.nfs and later.stage == "tftp-sent" and not later.mounted_since
        assert "no NFS traffic since" in later.describe()
    finally:
        for proc in (client, listener):
            if proc is not None:
                proc.kill()
                proc.wait()


def _boot_step(step: dict[str, object]) -> BootStep:
    """The step as `status` reads it (netroot.netboot.bootstage.parse_reply)."""
    reply = json.dumps({"ok": True, "boards": {"pi-01": step}})
    return parse_reply("nfs-01", reply)["pi-01"]
