"""`status`'s boot stage of an unreachable diskless board: the request netroot sends, the
program's answer read back (the real program, run by an `ssh` that runs the remote command
here), the line `status` prints and the rows it merges; a server that cannot be read said as
netroot's other helpers on the server say it; its ssh ended by a Ctrl-C, by netroot's death and
by the time bound."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from netroot.adapters.serverssh import ssh_failure
from netroot.adapters.ssh import resolve
from netroot.errors import NetrootError
from netroot.fleet.status import BoardStatus, with_boot
from netroot.inventory import Inventory, load
from netroot.netboot import bootstage
from netroot.netboot.bootstage import boot_steps
from netroot.netboot.bootstep import WHAT, BootStep, last_reply, parse_reply, request_for
from netroot.sshtarget import target_for
from tests.interrupts import sigint_as_at_a_terminal
from tests.unit.cli.test_interrupt import _to_a_worker_thread
from tests.unit.core.fleetkit import netroot_cli

TFTP = "/srv/netroot-tftp"
# One server, reached through an `ssh` that runs the remote command on this host.
INVENTORY = """all:
  children:
    nfs_servers:
      hosts:
        nfs-01: {{ansible_host: 10.88.0.1, netroot_export_root: /srv/netroot, ansible_user: root,
                 ansible_port: 22, ansible_ssh_executable: {ssh},
                 netroot_nfs_server_dnsmasq_log: {log}}}
    boards:
      hosts:
        pi-01: {{ansible_host: 10.88.0.11, netroot_address: 10.88.0.11, netroot_boot: netboot,
                netroot_mac: "B8:27:EB:00:00:01", netroot_serial: 1a2b3c01}}
        pi-02: {{ansible_host: 10.88.0.12, netroot_address: 10.88.0.12, netroot_boot: netboot,
                netroot_mac: "b8:27:eb:00:00:02", netroot_serial: 1a2b3c02}}
        pi-03: {{ansible_host: 10.88.0.13, netroot_address: 10.88.0.13}}
"""
# dnsmasq ends some lines with a space (kept: {SP}).
SP = " "
LOG = f"""\
Dec  7 17:42:00 dnsmasq-dhcp[77]: 1 DHCPACK(eth0) 10.88.0.11 b8:27:eb:00:00:01{SP}
Dec  7 17:42:01 dnsmasq-tftp[77]: sent {TFTP}/1a2b3c01/pxelinux.cfg/default to 10.88.0.11
Dec  7 17:42:03 dnsmasq-tftp[77]: sent {TFTP}/1a2b3c01/vmlinuz to 10.88.0.11
Dec  7 17:42:04 dnsmasq-dhcp[77]: 2 DHCPDISCOVER(eth0) b8:27:eb:00:00:02{SP}
"""


def _inventory(tmp_path: Path, ssh: str) -> Inventory:
    (tmp_path / "dnsmasq.log").write_text(LOG)
    path = tmp_path / "inventory.yml"
    path.write_text(INVENTORY.format(ssh=ssh, log=tmp_path / "dnsmasq.log"))
    return load(path)


def fake_ssh(tmp_path: Path, remote: str) -> str:
    """An `ssh` whose remote side is the shell line `remote` (the remote command is its last
    argument, "$@"'s); `ssh -G` (the options netroot reads before it connects) is the real
    client's."""
    ssh = tmp_path / "ssh"
    ssh.write_text(
        '#!/bin/bash\nfor a; do [ "$a" = -G ] && exec /usr/bin/ssh "$@"; done\n' + remote + "\n"
    )
    ssh.chmod(0o755)
    return str(ssh)


@pytest.fixture
def local_ssh(tmp_path: Path) -> str:
    """An `ssh` that runs its last argument (the remote command) here, with sh."""
    return fake_ssh(tmp_path, 'exec /bin/sh -c "${@: -1}"')


def test_the_request_names_the_servers_log_tftp_root_and_each_boards_mac_and_address(
    tmp_path: Path, local_ssh: str
) -> None:
    inv = _inventory(tmp_path, local_ssh)
    request = request_for(inv.servers["nfs-01"], [inv.boards["pi-01"]])
    assert request == {
        "log": str(tmp_path / "dnsmasq.log"),
        "tftp_root": TFTP,
        "boards": [{"name": "pi-01", "mac": "b8:27:eb:00:00:01", "address": "10.88.0.11"}],
    }


def test_the_servers_program_tells_each_diskless_boards_step(
    tmp_path: Path, local_ssh: str
) -> None:
    inv = _inventory(tmp_path, local_ssh)
    steps = boot_steps(inv, list(inv.boards.values()))
    assert set(steps) == {"pi-01", "pi-02"}  # pi-03 boots from its card: not asked
    one, two = steps["pi-01"], steps["pi-02"]
    assert isinstance(one, BootStep) and isinstance(two, BootStep)
    assert (one.event, one.detail, one.nfs) == ("tftp-sent", "1a2b3c01/vmlinuz", False)
    assert one.time is not None and time.strftime("%H:%M:%S", time.localtime(one.time)) == (
        "17:42:03"
    )
    assert one.describe() == "tftp: sent 1a2b3c01/vmlinuz at 17:42:03, no NFS connection now"
    assert two.describe().startswith("dhcp: discover at 17:42:04")


def test_a_server_that_cannot_be_read_is_named_for_its_boards(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, "/bin/false")
    steps = boot_steps(inv, [inv.boards["pi-01"], inv.boards["pi-03"]])
    # an ssh that fails without a word fails already at `ssh -G` (the options read first)
    assert steps == {
        "pi-01": "nfs-01: ssh refuses its options: ssh failed without a word (check "
        "ansible_ssh_args, ansible_ssh_common_args, ansible_ssh_extra_args and ~/.ssh/config)"
    }
    with pytest.raises(NetrootError, match="nfs-01: reading its boot log: no such file"):
        parse_reply("nfs-01", {"ok": False, "error": "no such file"})
    with pytest.raises(NetrootError, match="nfs-01: no dnsmasq log there yet"):
        parse_reply("nfs-01", {"ok": True, "boards": {}, "log_exists": False})
    assert last_reply('noise\n{"ok": true}\n') == {"ok": True}
    assert last_reply("") is None and last_reply("[1]") is None and last_reply("{") is None


# What ssh says when it cannot log in, and sudo when it wants a password (the shared wording
# of netroot's helpers on the server: netroot.adapters.serverssh.ssh_failure).
REFUSALS = {
    "key": ("root@10.88.0.1: Permission denied (publickey).", 255),
    "host key": ("Host key verification failed.", 255),
    "sudo": ("sudo: a password is required", 1),
}


@pytest.mark.parametrize("why", sorted(REFUSALS))
def test_a_refusal_is_worded_as_the_other_helpers_word_it(tmp_path: Path, why: str) -> None:
    said, rc = REFUSALS[why]
    inv = _inventory(tmp_path, fake_ssh(tmp_path, f"echo '{said}' >&2; exit {rc}"))
    steps = boot_steps(inv, [inv.boards["pi-01"]])
    shared = ssh_failure(resolve(target_for(inv.servers["nfs-01"].host)), WHAT, rc, said)
    assert steps == {"pi-01": f"{shared.message} ({shared.hint})"}
    line = {
        "key": "nfs-01: ssh root@10.88.0.1:22 failed: root@10.88.0.1: Permission denied",
        "host key": "nfs-01: ssh root@10.88.0.1:22 failed: Host key verification failed",
        "sudo": "nfs-01: sudo -n asks root for a password (reading its boot log)",
    }[why]
    assert str(steps["pi-01"]).startswith(line), steps


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("sudo"), reason="needs root and sudo")
def test_a_sudo_that_wants_a_password_is_said_as_the_other_helpers_say_it(
    tmp_path: Path,
) -> None:
    """The real sudo: the server's user (nobody here) has no passwordless sudo."""
    inv_text = INVENTORY.replace("ansible_user: root", "ansible_user: nobody, ansible_become: true")
    (tmp_path / "dnsmasq.log").write_text(LOG)
    ssh = fake_ssh(tmp_path, 'exec runuser -u nobody -- /bin/sh -c "${@: -1}"')
    path = tmp_path / "inventory.yml"
    path.write_text(inv_text.format(ssh=ssh, log=tmp_path / "dnsmasq.log"))
    inv = load(path)
    steps = boot_steps(inv, [inv.boards["pi-01"]])
    assert steps == {
        "pi-01": "nfs-01: sudo -n asks nobody for a password (reading its boot log) (give the "
        "user passwordless sudo on the server (NOPASSWD), or log in as root)"
    }


def hanging_ssh(tmp_path: Path) -> tuple[str, Path]:
    """An `ssh` that writes its pid to a file and then never answers (as a server whose
    helper hangs); the file."""
    pid = tmp_path / "ssh.pid"
    return fake_ssh(tmp_path, f"echo $$ > {pid}.new; mv {pid}.new {pid}; exec sleep 600"), pid


def _gone(pid: int) -> bool:
    """Exited (a zombie nobody reaped yet counts: it runs nothing)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while not _gone(pid):
        assert time.monotonic() < deadline, f"the server's ssh (pid {pid}) still runs"
        time.sleep(0.05)


def test_a_server_that_does_not_answer_is_given_up_and_its_ssh_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ssh, pid_file = hanging_ssh(tmp_path)
    inv = _inventory(tmp_path, ssh)
    monkeypatch.setattr(bootstage, "TIMEOUT", 1)
    steps = boot_steps(inv, [inv.boards["pi-01"]])
    assert steps == {"pi-01": "nfs-01: reading its boot log: no answer in 1s"}
    assert _gone(int(pid_file.read_text()))  # killed, not left behind


def _status_waiting_on_the_server(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """`netroot status` of an unreachable diskless board, waiting on its server's answer; the
    pid of the server's ssh."""
    ssh, pid_file = hanging_ssh(tmp_path)
    inv = _status_inventory(tmp_path, ssh)
    env = {**os.environ, "NO_COLOR": "1", "NETROOT_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "netroot", "-i", str(inv), "status"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env, preexec_fn=sigint_as_at_a_terminal,
    )  # fmt: skip
    deadline = time.monotonic() + 120  # a loaded machine may still be starting Python
    while not pid_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    return proc, int(pid_file.read_text())


@pytest.mark.parametrize("how", ["ctrl-c", "ctrl-c taken by a worker", "kill -9"])
def test_the_servers_ssh_ends_with_a_ctrl_c_and_with_netroot(tmp_path: Path, how: str) -> None:
    """A Ctrl-C ends `status` at once (not after the server's minute) and its ssh with it; a
    netroot killed leaves no ssh behind either."""
    proc, ssh_pid = _status_waiting_on_the_server(tmp_path)
    if how == "kill -9":
        proc.kill()
    elif how == "ctrl-c":
        proc.send_signal(signal.SIGINT)
    else:
        _to_a_worker_thread(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"still running 30 s after {how}: {proc.communicate()}") from None
    if how != "kill -9":
        assert proc.returncode == 130, err
        assert err.splitlines()[-1] == "interrupted: nothing committed", err
    _wait_gone(ssh_pid)


def _row(board: str, reachable: bool) -> BoardStatus:
    return BoardStatus(board, reachable, "a" * 16, "current", None, None, None, None, "ok",
                       "" if reachable else "unknown (unreachable)", stage="switching")  # fmt: skip


def test_status_merges_the_step_into_unreachable_diskless_rows_only() -> None:
    step = BootStep("DHCPACK", "10.88.0.11", 1_000.0, True, 1_030.0)
    rows = [_row("pi-01", False), _row("pi-02", True), _row("pi-03", False)]
    merged = with_boot(rows, {"pi-01": step, "pi-02": step, "pi-03": "nfs-01: no answer"})
    assert merged[0].boot_stage == step.describe() and merged[0].boot_event == "nfs"
    assert merged[0].boot_since == 1_030.0 and merged[0].boot_nfs is True
    assert merged[0].boot_stage.startswith("nfs: root mounted, traffic at ")
    assert merged[1] == rows[1]  # reachable: nothing to find
    assert merged[2].boot_stage == "its server's boot log: nfs-01: no answer"
    assert merged[0].to_dict()["boot_stage"] == merged[0].boot_stage  # --json carries it
    assert BootStep("", "", None, False).describe() == (
        "no DHCP or TFTP for it in the server's dnsmasq log, no NFS connection now"
    )


def test_only_nfs_traffic_after_the_last_step_counts_as_this_boots_mount() -> None:
    """A board power-cycled mid-boot sends no FIN: the server keeps its earlier boot's
    connection (what the lab showed: `tftp: sent initrd.img`, and a connection still open)."""
    at = time.mktime(time.strptime("2026 Dec 7 17:26:37", "%Y %b %d %H:%M:%S"))
    stale = BootStep("tftp-sent", "4e420001/initrd.img", at, True, at - 60)
    assert (stale.stage, stale.since, stale.mounted_since) == ("tftp-sent", at, False)
    assert "no NFS traffic since (its open connection is an earlier boot's" in stale.describe()
    same_second = BootStep("tftp-sent", "x", at, True, at + 0.5)  # dnsmasq's stamp is whole
    assert not same_second.mounted_since
    after = BootStep("DHCPACK", "10.77.0.51", at, True, at + 25)
    assert (after.stage, after.since) == ("nfs", at + 25)
    assert after.describe().endswith("(after dhcp: ack 10.77.0.51 at 17:26:37)")
    unknown = BootStep("DHCPACK", "10.77.0.51", at, True, None)  # no `ss` on the server
    assert unknown.stage == "DHCPACK" and "maybe an earlier boot's" in unknown.describe()


def _status_inventory(tmp_path: Path, ssh: str) -> Path:
    """The boards are closed ports on loopback (unreachable at once); the server's `ssh` is
    `ssh`, its export root on this host (no fleet helper session)."""
    (tmp_path / "dnsmasq.log").write_text(LOG)
    boards = {
        "pi-01": {"ansible_host": "127.0.0.11", "ansible_port": 1, "netroot_address": "10.88.0.11",
                  "netroot_boot": "netboot", "netroot_mac": "b8:27:eb:00:00:01",
                  "netroot_serial": "1a2b3c01", "netroot_image": "img"},
        "pi-03": {"ansible_host": "127.0.0.13", "ansible_port": 1, "netroot_image": "img"},
    }  # fmt: skip
    server = {"ansible_host": "127.0.0.2", "ansible_port": 22, "ansible_user": "root",
              "ansible_ssh_executable": ssh, "netroot_export_root": str(tmp_path / "root"),
              "netroot_nfs_server_dnsmasq_log": str(tmp_path / "dnsmasq.log")}  # fmt: skip
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": server}},
                                 "boards": {"hosts": boards}}}}  # fmt: skip
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(data))
    return inv


def test_status_names_an_unreachable_diskless_boards_boot_stage(
    tmp_path: Path, local_ssh: str
) -> None:
    """Through the CLI: the server's `ssh` runs the program here on the log above."""
    inv = _status_inventory(tmp_path, local_ssh)
    proc = netroot_cli(inv, "status")
    assert proc.returncode == 4, proc.stdout + proc.stderr  # unreachable, as before
    said = "pi-01: boot: tftp: sent 1a2b3c01/vmlinuz at 17:42:03, no NFS connection now"
    assert said in proc.stderr.splitlines()
    assert "pi-03: boot:" not in proc.stderr  # it boots from its card
    rows = {
        r["board"]: r for r in json.loads(netroot_cli(inv, "status", "--json").stdout)["boards"]
    }
    assert rows["pi-01"]["boot_event"] == "tftp-sent" and rows["pi-01"]["boot_nfs"] is False
    assert rows["pi-01"]["boot_stage"] == said.removeprefix("pi-01: boot: ")
    assert rows["pi-03"]["boot_stage"] == "" and rows["pi-03"]["boot_since"] is None
