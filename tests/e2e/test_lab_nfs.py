"""Issue 3's Show: a board's own kernel mounts an exported version from nfs-01 and runs the
image's armhf python3 in a chroot; a board cannot mount an export restricted to another.

The ganesha.conf here is test setup (the provision role owns the real one): two exports of the
version `netroot export` wrote, one open to the lab's boards, one to pi-02 alone.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import LabHandle

pytestmark = pytest.mark.e2e

IMAGE = "netroot-lab/raspbian:bookworm"
SERVER = "nfs-01"
WORK = "/run/netroot-lab-test"  # inside nfs-01: this test's ganesha config, log, pidfile
MOUNTS = {
    "4.1": "vers=4.1",
    "3": "vers=3,proto=tcp,port=2049,mountport=20048,mountproto=tcp,nolock",
}


def _ganesha_conf(version_dir: Path, boards: list[str], only: str) -> str:
    def export(export_id: int, pseudo: str, clients: str) -> str:
        return (
            f"EXPORT {{\n  Export_Id = {export_id};\n  Path = {version_dir};\n"
            f"  Pseudo = {pseudo};\n  Protocols = 3, 4;\n  Transports = TCP;\n"
            "  Access_Type = None;\n  Squash = no_root_squash;\n  SecType = sys;\n"
            f"  FSAL {{ Name = VFS; }}\n  CLIENT {{ Clients = {clients}; Access_Type = RO; }}\n}}\n"
        )

    return (
        "NFS_CORE_PARAM { mount_path_pseudo = true; Protocols = 3, 4; MNT_Port = 20048; }\n"
        "NFSv4 { Graceless = true; }\n"
        "NFS_KRB5 { Active_krb5 = false; }\n"
        + export(1, "/lab", ", ".join(boards))
        + export(2, "/only-one", only)
    )


def _export_version(lab: LabHandle) -> Path:
    """`netroot export` of the Raspbian stand-in into the lab's export root."""
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        pytest.fail(f"{IMAGE} missing: `netroot lab up` builds it")
    argv = [
        sys.executable,
        "-m",
        "netroot",
        "-i",
        str(lab.inventory),
        "export",
        IMAGE,
        "--name",
        "raspbian",
        "--root",
        str(lab.export_root),
        "--json",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    version = str(json.loads(proc.stdout)["current"])
    path = lab.export_root / "raspbian" / "versions" / version
    assert (path / "usr" / "bin" / "python3").exists()
    return path


def _stop_ganesha(lab: LabHandle) -> None:
    # Ours (by pidfile), or one the provision role left running (its control script).
    lab.ssh(
        SERVER,
        f"[ -f {WORK}/ganesha.pid ] && kill $(cat {WORK}/ganesha.pid); "
        "[ -x /usr/local/sbin/netroot-ganesha ] && /usr/local/sbin/netroot-ganesha stop; "
        "for i in $(seq 1 100); do pgrep -x ganesha.nfsd >/dev/null || exit 0; sleep 0.1; "
        "done; exit 1",
        check=False,
    )


@pytest.fixture(scope="module")
def served(lab: LabHandle) -> Iterator[LabHandle]:
    """nfs-01 serving the exported version: /lab to every board, /only-one to pi-02 alone."""
    version_dir = _export_version(lab)
    addr = lab.addresses
    conf = _ganesha_conf(version_dir, [addr[b] for b in lab.boards], addr["pi-02"])
    _stop_ganesha(lab)
    lab.ssh(SERVER, f"mkdir -p {WORK} && printf %s {shlex.quote(conf)} > {WORK}/ganesha.conf")
    lab.ssh(
        SERVER,
        f"ganesha.nfsd -f {WORK}/ganesha.conf -L {WORK}/ganesha.log "
        f"-p {WORK}/ganesha.pid -N NIV_EVENT",
    )
    probe = "import socket; socket.create_connection(('127.0.0.1', 2049), 1)"
    lab.ssh(
        SERVER,
        f"for i in $(seq 1 100); do python3 -c {shlex.quote(probe)} 2>/dev/null "
        f"&& exit 0; sleep 0.2; done; cat {WORK}/ganesha.log; exit 1",
    )
    yield lab
    for board in lab.boards:
        lab.ssh(board, "umount -R -l /mnt/netroot-test 2>/dev/null; true", check=False)
    _stop_ganesha(lab)


def _mount(lab: LabHandle, board: str, pseudo: str, vers: str) -> subprocess.CompletedProcess[str]:
    opts = f"ro,{MOUNTS[vers]}"
    return lab.ssh(
        board,
        "mkdir -p /mnt/netroot-test && timeout 120 mount -t nfs -o "
        f"{opts} {lab.addresses[SERVER]}:{pseudo} /mnt/netroot-test",
        check=False,
    )


CHROOT_PY = (
    "import json, os, platform, struct, numpy; print(json.dumps({'bits': struct.calcsize('P')*8,"
    " 'numpy': numpy.__version__, 'sum': int(numpy.arange(10).sum()),"
    " 'dev_null': os.path.exists('/dev/null'), 'proc_self': os.path.exists('/proc/self/status'),"
    " 'sys_kernel': os.path.isdir('/sys/kernel'), 'exe': os.readlink('/proc/self/exe')}))"
)


@pytest.mark.parametrize("vers", ["4.1", "3"])
def test_board_mounts_exported_version_and_runs_armhf_python_in_chroot(
    served: LabHandle, vers: str
) -> None:
    lab = served
    board = "pi-01" if vers == "4.1" else "pi-03"
    lab.ssh(board, "umount -R -l /mnt/netroot-test 2>/dev/null; true", check=False)
    t0 = time.monotonic()
    proc = _mount(lab, board, "/lab", vers)
    assert proc.returncode == 0, proc.stderr
    mounted = lab.ssh(board, "grep ' /mnt/netroot-test ' /proc/mounts").stdout
    assert f"{lab.addresses[SERVER]}:/lab" in mounted and " nfs" in mounted
    root = "/mnt/netroot-test"
    # rslave: unmounting the chroot's binds must not propagate back to the board's own mounts.
    lab.ssh(
        board,
        f"for d in dev proc sys; do mount --rbind /$d {root}/$d && "
        f"mount --make-rslave {root}/$d; done",
    )
    out = lab.ssh(board, f"chroot {root} /usr/bin/python3 -c {shlex.quote(CHROOT_PY)}").stdout
    print(f"\n[time] NFSv{vers} mount + chroot python3 on {board}: {time.monotonic() - t0:.1f} s")
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts["bits"] == 32  # the image's armhf interpreter, not the board's own
    assert facts["sum"] == 45 and facts["numpy"]
    assert facts["dev_null"] and facts["proc_self"] and facts["sys_kernel"]
    assert facts["exe"].startswith("/usr/bin/python3")
    # The interpreter came over NFS: the file the board ran is the version's own ELF (armhf).
    elf = lab.ssh(board, f"od -An -tx1 -N20 {root}/usr/bin/python3.11").stdout.split()
    assert elf[4] == "01" and elf[18] == "28"  # ELFCLASS32, EM_ARM
    assert lab.ssh(board, f"touch {root}/usr/x", check=False).returncode != 0  # read-only
    lab.ssh(board, f"umount -R -l {root}")


@pytest.mark.parametrize("vers", ["4.1", "3"])
def test_board_cannot_mount_an_export_restricted_to_another(served: LabHandle, vers: str) -> None:
    lab = served
    denied = _mount(lab, "pi-01", "/only-one", vers)
    assert denied.returncode != 0, "pi-01 mounted an export that only pi-02 may mount"
    assert "denied" in denied.stderr.lower() or "no such file" in denied.stderr.lower(), (
        denied.stderr
    )
    assert (
        lab.ssh("pi-01", "grep -c ' /mnt/netroot-test ' /proc/mounts", check=False).stdout.strip()
        == "0"
    )
    allowed = _mount(lab, "pi-02", "/only-one", vers)  # the same export works for its board
    assert allowed.returncode == 0, allowed.stderr
    lab.ssh("pi-02", "test -x /mnt/netroot-test/usr/bin/python3 && umount /mnt/netroot-test")
