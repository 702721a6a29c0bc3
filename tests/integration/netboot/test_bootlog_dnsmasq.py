"""A diskless board's boot stage from a real dnsmasq's log: netroot's dnsmasq config in the
network namespaces test_pi3b_rom makes, a DISCOVER shaped like the 3B ROM's, then its files
over TFTP, then a TCP connection to the server's NFS port; after each step `status`'s request
(netroot.netboot.bootstage.ask: the program netroot.remote.bootlog as netroot.bundle sends it,
run in the server's namespace by an `ssh` that runs the remote command there) names that step.

No traffic leaves the namespaces (test_pi3b_rom's docstring).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from netroot.inventory import load
from netroot.netboot.bootstage import ask
from netroot.netboot.bootstep import BootStep
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


def _stage(srv: Server, tmp_path: Path) -> BootStep:
    """pi-01's step as `status` asks its server for it."""
    ssh = tmp_path / "ssh"
    ssh.write_text(
        '#!/bin/bash\nfor a; do [ "$a" = -G ] && exec /usr/bin/ssh "$@"; done\n'
        f'exec ip netns exec {srv.ns.server} /bin/sh -c "${{@: -1}}"\n'
    )
    ssh.chmod(0o755)
    nfs = {
        "ansible_host": SERVER,
        "ansible_port": 22,
        "ansible_user": "root",
        "ansible_ssh_executable": str(ssh),
        "netroot_export_root": str(tmp_path / "root"),
        "netroot_tftp_root": str(srv.tftp),
        "netroot_nfs_server_dnsmasq_log": str(srv.log),
    }
    board = {
        "ansible_host": BOARD_ADDRESS,
        "netroot_address": BOARD_ADDRESS,
        "netroot_boot": "netboot",
        "netroot_mac": MAC,
        "netroot_serial": SERIAL,
    }
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": nfs}},
                                 "boards": {"hosts": {"pi-01": board}}}}}  # fmt: skip
    path = tmp_path / "status-inventory.yml"
    path.write_text(yaml.safe_dump(data))
    inv = load(path)
    return ask(inv.servers["nfs-01"], [inv.boards["pi-01"]])["pi-01"]


def test_each_boot_step_is_named_from_the_servers_own_records(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    assert _stage(server, tmp_path) == BootStep("", "", None, False, None)  # nothing yet
    started = time.time()
    assert server.discover(MAC, wait=20) is not None
    step = _stage(server, tmp_path)
    assert (step.event, step.detail, step.nfs) == ("PXE", "proxy", False)
    assert isinstance(step.time, float) and started - 2 <= step.time <= time.time() + 1

    server.fetch("bootcode.bin", *(f"{SERIAL}/{f}" for f in FILES))
    step = _stage(server, tmp_path)
    assert (step.event, step.detail) == ("tftp-sent", f"{SERIAL}/{FILES[-1]}")
    with pytest.raises(subprocess.CalledProcessError):
        server.fetch(f"{SERIAL}/kernel8.img")  # not in its directory
    step = _stage(server, tmp_path)
    assert (step.event, step.detail) == ("tftp-missing", f"{SERIAL}/kernel8.img")

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
        mounted = _stage(server, tmp_path)
        assert mounted.nfs is True and mounted.event == "tftp-missing"
        assert mounted.stage == "nfs" and mounted.describe().startswith("nfs: root mounted")
        # A later boot step with no NFS traffic after it: the open connection is an earlier
        # boot's (a board power-cycled mid-boot sends no FIN).
        time.sleep(1.2)
        server.fetch("bootcode.bin")
        later = _stage(server, tmp_path)
        assert later.nfs and later.stage == "tftp-sent" and not later.mounted_since
        assert "no NFS traffic since" in later.describe()
    finally:
        for proc in (client, listener):
            if proc is not None:
                proc.kill()
                proc.wait()
