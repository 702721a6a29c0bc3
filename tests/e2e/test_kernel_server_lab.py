"""Issue 21's kernel server on the virtual lab: `lab up --server kernel`, nfs-01 a Debian x86_64
VM with Linux's own nfs-kernel-server, reached over SSH as its sudo user (root refused), its
export root a remote one (`netroot_export_remote`): a path on the VM's own export disk.

`netroot export` on the control host lands on the server (verified there), then one rollout
does most of the work (each costs minutes of emulated boards): nfsd is restarted once the
canary has mounted the version, and the rollout (provision + smoke per board) still completes;
then status, `exportfs -v` (exactly the inventory's boards, read-only, an fsid each), a board's
own NFSv3 and NFSv4.2 mounts, and a rollback of one board after a second rollout to it.

The module brings the lab up with the kernel server itself, and gives back what it found: a
lab that was down is taken down, a ganesha lab is brought back as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from netroot.paths import project_file
from tests.e2e.conftest import LabHandle, _report, current_lab
from tests.e2e.helpers import netroot, netroot_json, netroot_while, variant_image

pytestmark = pytest.mark.e2e

BOARDS = 2
SERVER = "nfs-01"
FAST = ("--qpu", "skip", "--yes", "--canary", "1", "--batch", "100%")


@dataclass(frozen=True)
class KernelLab:
    lab: LabHandle
    inventory: Path  # this module's copy (own state file)


@pytest.fixture(scope="module")
def kernel_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelLab]:
    from netroot import paths
    from netroot.errors import EnvironmentMissing
    from netroot.lab import state
    from netroot.lab.host import service

    try:
        service.check_environment()
    except EnvironmentMissing as exc:
        pytest.skip(f"virtual lab cannot run here: {exc.message} ({exc.hint})")
    before = service.status()
    before_kind = state.load(paths.lab_dir() / "state.json").get("server") or "ganesha"
    t0 = time.monotonic()
    service.up(BOARDS, _report, server_kind="kernel")
    _report(f"kernel lab ready after {time.monotonic() - t0:.1f} s")
    handle = current_lab(started_here=not before.anything_running)
    copy = tmp_path_factory.mktemp("kernel") / "inventory.yml"
    shutil.copy(handle.inventory, copy)
    yield KernelLab(handle, copy)
    if handle.started_here:
        service.down(_report)
    elif before_kind != "kernel":
        service.up(max(1, before.boards_planned), _report, server_kind=str(before_kind))


def test_lab_server_is_a_sudo_user_on_a_kernel_nfs_server(kernel_lab: KernelLab) -> None:
    from netroot.lab.host import service

    lab = kernel_lab.lab
    # `lab status` finds the VM and `healthy` logs in to it as its sudo user.
    status = service.status()
    server = next(h for h in status.hosts if h.role == "server")
    assert server.running and server.ssh and server.rss_mib
    assert status.up and service.healthy(status)
    target = lab.targets[SERVER]
    assert (target.user, target.become) == ("admin", True)
    # Root is refused over SSH, as on a real server.
    refused = lab.ssh(SERVER, "true", check=False, user="root")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    out = lab.ssh(SERVER, "uname -m; cat /proc/fs/nfsd/versions; findmnt -no FSTYPE,SOURCE "
                  f"{lab.export_root}").stdout.split("\n")  # fmt: skip
    assert out[0] == "x86_64"
    assert "+3" in out[1] and "+4.2" in out[1]
    # The export root is a disk of its own, not the server's root filesystem.
    assert out[2].split()[0] == "ext4" and out[2].split()[1] != "/dev/vda"


def test_export_lands_on_the_server_and_rollout_survives_an_nfsd_restart(
    kernel_lab: KernelLab,
) -> None:
    lab, inv = kernel_lab.lab, kernel_lab.inventory
    exported = netroot_json(inv, "export", variant_image("e2e-kernel", f"kernel {time.time()}"),
                            "--name", "raspbian")  # fmt: skip
    version = str(exported.get("version") or exported["manifest"]["version"])
    assert exported["server"] == SERVER and exported["bytes_sent"] > 0
    # The version is on the server's export disk, complete with its manifest, and re-hashed
    # there against it (`verify` runs on the server); the control host holds no copy.
    versions = lab.export_root / "raspbian" / "versions"
    lab.ssh(SERVER, f"test -d {versions}/{version} && test -f {versions}/{version}.json")
    verified = netroot(inv, "verify", f"raspbian@{version}")
    assert verified.returncode == 0, verified.stdout[-2000:] + verified.stderr[-2000:]
    assert not (versions / version).exists()

    fleet = f"{lab.export_root}/.netroot-fleet.json"
    restarted: list[str] = []

    def restart_nfsd_once_the_canary_mounts(running: Callable[[], bool]) -> None:
        # The fleet state is the server's: restart nfsd as soon as it says a board mounted the
        # version, while the rollout still runs (the canary's smoke, the next batch).
        while running():
            probe = lab.ssh(SERVER, f'grep -q \'"mounted": "{version}"\' {fleet}', check=False)
            if probe.returncode == 0 and running():
                lab.ssh(SERVER, "systemctl restart nfs-server")
                restarted.append(time.strftime("%T"))
                return
            time.sleep(2)

    args = ["rollout", "netroot-lab/raspbian:e2e-kernel", "--name", "raspbian", "--json", *FAST]
    proc = netroot_while(inv, args, restart_nfsd_once_the_canary_mounts)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert restarted, "nfsd was not restarted while the rollout ran"
    result = json.loads(proc.stdout)
    assert {b["board"]: (b["outcome"], b["version"]) for b in result["boards"]} == {
        b: ("ok", version) for b in lab.boards
    }

    status = json.loads(netroot(inv, "status", "--json").stdout)["boards"]
    assert {b["board"]: (b["mounted"], bool(b["drift"])) for b in status} == {
        b: (version, False) for b in lab.boards
    }

    # Exactly the inventory's boards, read-only, a fixed fsid, on the image's export.
    exports = lab.ssh(SERVER, "exportfs -v").stdout
    grants = re.findall(r"(\d+\.\d+\.\d+\.\d+)\(([^)]*)\)", exports)
    assert sorted(addr for addr, _ in grants) == sorted(lab.addresses[b] for b in lab.boards)
    for _, options in grants:
        opts = options.split(",")
        assert "ro" in opts and "rw" not in opts and any(o.startswith("fsid=") for o in opts)
    assert f"{lab.export_root}/raspbian" in exports

    # A board mounts the export itself over NFSv3 and NFSv4.2 (its root is served too).
    board = lab.boards[0]
    share = f"{lab.addresses[SERVER]}:{lab.export_root}/raspbian"
    mnt = "/mnt/nr-kernel"
    for opts, vers in (("vers=3,proto=tcp,nolock", "vers=3"), ("vers=4.2", "vers=4.2")):
        line = (
            f"mkdir -p {mnt} && mount -t nfs -o {opts} {share} {mnt}"
            f" && test -x {mnt}/versions/{version}/usr/bin/python3"
            f" && grep ' {mnt} ' /proc/mounts; umount {mnt}"
        )
        mount = lab.ssh(board, line)
        assert vers in mount.stdout, mount.stdout
    root = lab.ssh(board, "/usr/local/sbin/netroot-chroot /usr/bin/python3 -c 'print(6*7)'")
    assert root.stdout.strip().endswith("42")


def test_rollback_of_a_board_returns_it_to_the_version_before(kernel_lab: KernelLab) -> None:
    """A second rollout to one board, then its rollback: back on the first version (the fleet
    state that knows it is the server's)."""
    inv = kernel_lab.inventory
    board = kernel_lab.lab.boards[0]

    def mounted() -> str:
        status = json.loads(netroot(inv, "status", board, "--json").stdout)["boards"]
        return str(next(b["mounted"] for b in status if b["board"] == board))

    first = mounted()
    image = variant_image("e2e-kernel-b", f"kernel b {time.time()}")
    proc = netroot(inv, "rollout", image, "--name", "raspbian", "--group", board, "--json", *FAST)
    assert proc.returncode == 0, proc.stderr[-3000:]
    second = json.loads(proc.stdout)["boards"][0]["version"]
    assert second != first and mounted() == second
    proc = netroot(inv, "rollback", board, "--yes", "--json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert mounted() == first


def test_exports_the_kernel_refuses_are_not_kept(kernel_lab: KernelLab, tmp_path: Path) -> None:
    """`exportfs -ra` is the real check: an export nfsd cannot serve (a ramfs has no file
    handles) passes the static check, is refused by the kernel, and the previous /etc/exports
    is put back, byte for byte, and served as before."""
    lab = kernel_lab.lab
    refused = f"{lab.export_root}/refused"
    before = lab.ssh(SERVER, "sha256sum /etc/exports; exportfs -v").stdout
    lab.ssh(SERVER, f"mkdir -p {refused} && mount -t ramfs netroot-test {refused}"
            f" && mkdir -p {refused}/versions/{'0' * 16}")  # fmt: skip
    try:
        data = yaml.safe_load(kernel_lab.inventory.read_text())
        lab_group = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
        lab_group[lab.boards[-1]]["netroot_image"] = "refused"
        inv = tmp_path / "inventory.yml"
        inv.write_text(yaml.safe_dump(data))
        playbooks = project_file("playbooks")
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv),
             str(playbooks / "nfs_server.yml")],
            env={**os.environ, "ANSIBLE_CONFIG": str(playbooks / "ansible.cfg")},
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert proc.returncode != 0
        assert "refused the new exports" in proc.stdout and "does not support NFS" in proc.stdout
        assert lab.ssh(SERVER, "sha256sum /etc/exports; exportfs -v").stdout == before
    finally:
        lab.ssh(SERVER, f"umount {refused}; rmdir {refused}", check=False)
