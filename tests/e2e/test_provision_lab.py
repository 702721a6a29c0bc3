"""`netroot provision` against the virtual lab (issue 4's Show): server + 3 boards from scratch.

Order matters (module-scoped lab): a bad inventory value first (nothing may run), then the
provision from scratch, what the chroots show, idempotence, isolation, hand-written lines, a
version switch with a process running in the chroot, and a board that is down.
Times are printed (`-s`) for the report; they are never asserted.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot.adapters.ansible import runs_dir
from netroot.errors import Exit
from netroot.fleet.state import state_path
from netroot.inventory import load
from netroot.provision.apply import provision
from tests.e2e.conftest import LabHandle

pytestmark = pytest.mark.e2e

BOARDS = ("pi-01", "pi-02", "pi-03")
NETROOT = [sys.executable, "-m", "netroot"]
IMAGE = "netroot-lab/raspbian:bookworm"
HAND_WRITTEN = (
    "# hand-written by the administrator: keep\nMDCACHE {\n    Entries_HWMark = 20000;\n}\n"
)
GANESHA_CONF = "/etc/ganesha/ganesha.conf"


@dataclass(frozen=True)
class Lab:
    """The session's lab (tests/e2e/conftest.py) plus the version exported for these tests."""

    handle: LabHandle
    version: str  # what `current` points to

    @property
    def inventory(self) -> Path:
        return self.handle.inventory

    @property
    def export_root(self) -> Path:
        return self.handle.export_root

    @property
    def addresses(self) -> dict[str, str]:
        return self.handle.addresses

    def ssh(self, host: str, command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.handle.ssh(host, command, check=check)


def _netroot(*args: str, inventory: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NETROOT_INVENTORY": str(inventory), "NO_COLOR": "1"}
    return subprocess.run([*NETROOT, *args], capture_output=True, text=True, env=env, timeout=3600)


def _export(root: Path, *extra: str) -> str:
    proc = subprocess.run(
        [*NETROOT, "export", IMAGE, "--name", "raspbian", "--root", str(root), "--json", *extra],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    return str(data.get("version") or data["manifest"]["version"])


def _set_current(image_dir: Path, version: str) -> None:
    tmp = image_dir / ".current.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(f"versions/{version}")
    tmp.replace(image_dir / "current")


def _reset(lab: Lab) -> None:
    """Undo any earlier provision so this one starts from scratch (boards and server)."""
    for board in BOARDS:
        lab.ssh(board, "systemctl disable --now netroot-mount 2>/dev/null; "
                "rm -rf /usr/local/sbin/netroot-mount /usr/local/sbin/netroot-chroot /etc/netroot "
                "/var/lib/netroot /etc/systemd/system/netroot-mount.service; "
                "systemctl daemon-reload", check=False)  # fmt: skip
    lab.ssh("nfs-01", "[ -x /usr/local/sbin/netroot-ganesha ] && "
            "/usr/local/sbin/netroot-ganesha stop; rm -f /usr/local/sbin/netroot-ganesha; "
            f"mkdir -p /etc/ganesha && printf %s {shlex.quote(HAND_WRITTEN)} > {GANESHA_CONF}",
            check=False)  # fmt: skip


@pytest.fixture(scope="module")
def plab(lab: LabHandle) -> Iterator[Lab]:
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        pytest.skip(f"{IMAGE} not built (netroot lab up builds it)")
    # One ganesha serves port 2049 in nfs-01: e2e modules that (re)configure it take turns.
    with (lab.lab_dir / ".ganesha.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # From scratch means boards never assigned: they follow `current`. Earlier modules'
        # rollouts left assignments in the fleet state, which provision honours.
        state_path(lab.export_root).unlink(missing_ok=True)
        yield Lab(lab, _export(lab.export_root))


def _copy_inventory(lab: Lab, tmp: Path, change: dict[str, dict[str, Any]]) -> Path:
    data = yaml.safe_load(lab.inventory.read_text())
    hosts = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    for name, values in change.items():
        hosts.setdefault(name, {}).update(values)
    path = tmp / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_bad_inventory_value_fails_before_any_host_is_touched(plab: Lab, tmp_path: Path) -> None:
    bad = _copy_inventory(plab, tmp_path, {"pi-02": {"netroot_board_layer": "nfs"}})
    before = sorted(runs_dir().glob("*")) if runs_dir().exists() else []
    proc = _netroot("provision", "--all", inventory=bad)
    assert proc.returncode == Exit.USAGE, proc.stderr
    assert "pi-02" in proc.stderr and "netroot_board_layer" in proc.stderr
    after = sorted(runs_dir().glob("*")) if runs_dir().exists() else []
    assert after == before  # ansible-runner was never started


def test_provision_from_scratch(plab: Lab) -> None:
    _reset(plab)
    t0 = time.monotonic()
    proc = _netroot("provision", "--all", "--json", inventory=plab.inventory)
    elapsed = time.monotonic() - t0
    print(f"\n[time] provision from scratch, server + {len(BOARDS)} boards: {elapsed:.1f} s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    for board in BOARDS:
        assert result["hosts"][board]["state"] == "changed"
        assert result["mounted"][board] == plab.version
    assert result["hosts"]["nfs-01"]["failed"] == 0


def test_each_chroot_shows_the_exported_versions_manifest(plab: Lab) -> None:
    manifest = json.loads(
        (plab.export_root / "raspbian" / "versions" / f"{plab.version}.json").read_text()
    )
    for board in BOARDS:
        shown = json.loads(
            plab.ssh(board, "netroot-chroot /bin/cat /run/netroot/manifest.json").stdout
        )
        assert shown["version"] == plab.version == manifest["version"]
        assert shown["tree_hash"] == manifest["tree_hash"]
        status = json.loads(plab.ssh(board, "netroot-mount --status").stdout)
        assert status["assigned"] == status["mounted"] == plab.version
        # Identity is the board's, not the image's.
        assert plab.ssh(board, "netroot-chroot /bin/cat /etc/hostname").stdout.strip() == board
        own_id = plab.ssh(board, "cat /etc/machine-id").stdout
        assert plab.ssh(board, "netroot-chroot /bin/cat /etc/machine-id").stdout == own_id


def test_the_version_is_mounted_immutable_and_the_export_is_not(plab: Lab) -> None:
    # The version's own mount (under the export's) skips close-to-open and caches attributes
    # for a day; the export root above it, whose versions/ and `current` change, keeps both.
    for board in BOARDS:
        lines = plab.ssh(board, "findmnt -rn -o TARGET,FSTYPE,OPTIONS").stdout.splitlines()
        opts = {t: o.split(",") for t, f, o in (x.split(" ", 2) for x in lines) if "nfs" in f}
        version = opts[f"/run/netroot/shared/versions/{plab.version}"]
        export = opts["/run/netroot/shared"]
        assert "ro" in version and "nocto" in version and "acregmin=86400" in version, version
        assert "ro" in export and "nocto" not in export, export
        assert not any(o.startswith("acregmin") for o in export), export


def test_second_provision_changes_nothing(plab: Lab) -> None:
    t0 = time.monotonic()
    proc = _netroot("provision", "--all", "--json", inventory=plab.inventory)
    print(f"\n[time] second provision (no change): {time.monotonic() - t0:.1f} s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    hosts = json.loads(proc.stdout)["hosts"]
    assert {name: h["changed"] for name, h in hosts.items()} == {n: 0 for n in hosts}


def test_boards_cannot_write_the_shared_tree_or_see_each_other(plab: Lab) -> None:
    plab.ssh("pi-01", "netroot-chroot /bin/sh -c 'echo pi-01 > /etc/netroot-probe'")
    assert plab.ssh("pi-01", "netroot-chroot /bin/cat /etc/netroot-probe").stdout == "pi-01\n"
    assert plab.ssh("pi-02", "netroot-chroot /bin/cat /etc/netroot-probe", check=False).returncode
    assert not (
        plab.export_root / "raspbian" / "versions" / plab.version / "etc" / "netroot-probe"
    ).exists()
    # The only export is read-only: even a fresh read-write mount from a board cannot write.
    server = plab.addresses["nfs-01"]
    export = f"{plab.export_root}/raspbian"
    rw_mount = f"mount -t nfs -o vers=4.1,rw {server}:{export} /mnt/probe"
    probe = plab.ssh("pi-02", f"mkdir -p /mnt/probe && {rw_mount} && "
                    f"touch /mnt/probe/versions/{plab.version}/x; rc=$?; "
                    "umount /mnt/probe 2>/dev/null; exit $rc", check=False)  # fmt: skip
    assert probe.returncode != 0
    assert "Read-only" in probe.stderr or "denied" in probe.stderr, probe.stderr
    conf = plab.ssh("nfs-01", f"cat {GANESHA_CONF}").stdout
    assert conf.startswith(HAND_WRITTEN)  # hand-written lines survive byte for byte
    assert "Access_Type = RW" not in conf and "*" not in conf.split(HAND_WRITTEN, 1)[1]


def test_switch_version_stops_the_chroot_and_remounts(plab: Lab) -> None:
    other = _export(plab.export_root, "--keep-host-keys")  # same image, other export options
    assert other != plab.version
    _set_current(
        plab.export_root / "raspbian", plab.version
    )  # the other boards stay where they are
    plab.ssh("pi-03", "nohup netroot-chroot /bin/sleep 3000 >/dev/null 2>&1 & sleep 1")
    inventory = load(plab.inventory)
    t0 = time.monotonic()
    result = provision(inventory, ["pi-03"], versions={"pi-03": other})
    print(f"\n[time] switch pi-03 to another version: {time.monotonic() - t0:.1f} s")
    assert result.exit_code == Exit.OK, result.as_dict()
    assert result.mounted["pi-03"] == other
    assert plab.ssh("pi-03", "cat /etc/netroot/assigned").stdout.strip() == other
    assert "sleep 3000" not in plab.ssh("pi-03", "ps -eo args").stdout
    shown = json.loads(
        plab.ssh("pi-03", "netroot-chroot /bin/cat /run/netroot/manifest.json").stdout
    )
    assert shown["version"] == other
    back = provision(inventory, ["pi-03"], versions={"pi-03": plab.version})
    assert back.mounted["pi-03"] == plab.version


def test_board_that_is_down_is_unreachable_while_the_others_complete(
    plab: Lab, tmp_path: Path
) -> None:
    # pi-09's address is in the lab network, but no board runs there.
    down = {"ansible_host": "10.77.0.19", "netroot_address": "10.77.0.19"}
    inventory = _copy_inventory(plab, tmp_path, {"pi-09": down})
    proc = _netroot("provision", "--all", "--json", inventory=inventory)
    assert proc.returncode == Exit.UNREACHABLE, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["hosts"]["pi-09"]["state"] == "unreachable"
    for board in BOARDS:
        assert result["hosts"][board]["state"] == "ok", result["hosts"][board]
    assert [f["host"] for f in result["failures"]] == ["pi-09"]
    # Leave the server exporting to the lab's real boards only.
    assert _netroot("provision", "nfs-01", inventory=plab.inventory).returncode == 0
