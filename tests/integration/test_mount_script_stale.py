"""netroot-mount lets go of mounts it cannot stat (the board role's templates/netroot-mount.j2).

A board moved from one live NFS server to another is dropped from the old server's exports; every
stat of its mounts of that server then fails with ESTALE. `mountpoint -q` took such a mount for
"not a mount point", so `netroot-mount --umount` (the unit's ExecStop on the switch) left it, and
the switch's mount failed with `mkdir: cannot stat '/run/netroot/shared': Stale file handle`
(reproduced on the lab: bench/README.md, "A board moved between two live servers").

Here, in a mount namespace of its own (nothing leaks to this host), the script's mounts are real
tmpfs mounts at the board's paths, and `mountpoint` answers as it does on a stale mount (exit 1,
"Stale file handle"): the script must still find them in the kernel's mount table and unmount
them all. The kernel NFS client this host lacks is what the lab's e2e supplies.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.integration.mount_script import IN_A_MOUNT_NAMESPACE, rendered

pytestmark = IN_A_MOUNT_NAMESPACE

# What the board has mounted when it runs a version: the export, the version's own mount under
# it, the overlay root and its /run (tmpfs here, each at the script's own paths).
SETUP = """
set -e
mount -t tmpfs soak-run /run
mkdir -p /run/netroot/shared /run/netroot/root
mount -t tmpfs old-server-export /run/netroot/shared
mkdir -p /run/netroot/shared/versions/0123456789abcdef
mount -t tmpfs old-server-version /run/netroot/shared/versions/0123456789abcdef
mount -t tmpfs overlay-root /run/netroot/root
mkdir -p /run/netroot/root/run
mount -t tmpfs chroot-run /run/netroot/root/run
echo 0123456789abcdef > /run/netroot/mounted
"""


def _script(tmp_path: Path) -> Path:
    text = rendered()
    path = tmp_path / "netroot-mount"
    path.write_text(text)
    path.chmod(0o755)
    return path


def _stale_mountpoint(tmp_path: Path) -> Path:
    """A `mountpoint` that answers as on a mount whose server returns ESTALE to every stat."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mountpoint"
    fake.write_text('#!/bin/sh\necho "mountpoint: $2: Stale file handle" >&2\nexit 1\n')
    fake.chmod(0o755)
    return bin_dir


def test_umount_lets_go_of_mounts_that_answer_stale(tmp_path: Path) -> None:
    script, bin_dir = _script(tmp_path), _stale_mountpoint(tmp_path)
    inside = (
        SETUP
        + f'PATH={bin_dir}:"$PATH" {script} --umount\n'
        + "echo rc=$?\n"
        + "grep -c ' /run/netroot/' /proc/self/mountinfo || true\n"
        + "ls /run/netroot\n"
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-c", inside],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    lines = done.stdout.split()
    assert done.returncode == 0 and "rc=0" in lines, done.stdout + done.stderr
    # Nothing of the board's left mounted, and the version no longer counts as mounted.
    assert lines[lines.index("rc=0") + 1] == "0", done.stdout + done.stderr
    assert "mounted" not in lines[lines.index("rc=0") + 2 :]


def test_status_reads_the_mount_table_not_stat(tmp_path: Path) -> None:
    script, bin_dir = _script(tmp_path), _stale_mountpoint(tmp_path)
    inside = SETUP + f'PATH={bin_dir}:"$PATH" {script} --status\n'
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-c", inside],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"mounted": "0123456789abcdef"' in done.stdout, done.stdout
