"""netroot-mount's tries at an NFS mount (the board role's templates/netroot-mount.j2).

A try is given `netroot_board_mount_attempt_timeout` seconds, and no try runs past the mount
unit's own start timeout (less 15 s): a server that never answers ends in the script's one line,
not in systemd's SIGTERM mid-mount. Under the fault soak's bad link a mount took tens of seconds
and tries cut at 20 s each started over from nothing (bench/README.md, "The fault soak").

Here, in a mount namespace of its own, `mount -t nfs` is a stand-in that hangs (a server that
never answers) or takes a while and then mounts a tmpfs (a slow link); every other mount is real.
The script's constants are shrunk so the test takes seconds.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.integration.mount_script import IN_A_MOUNT_NAMESPACE, rendered

pytestmark = IN_A_MOUNT_NAMESPACE

# `mount -t nfs ...` that takes $NFS_SECONDS and then mounts a tmpfs on its target (its last
# argument) holding the version's directory; any other mount is the real one.
FAKE_MOUNT = """#!/bin/bash
case " $* " in
  *" -t nfs "*) sleep "$NFS_SECONDS"; /bin/mount -t tmpfs slow-nfs "${@: -1}" &&
    mkdir -p "${@: -1}/versions/0123456789abcdef" ;;
  *) exec /bin/mount "$@" ;;
esac
"""


def _script(tmp_path: Path, attempt: int, deadline: int) -> Path:
    text = rendered()
    # The role's defaults, as rendered, before they are shrunk for the test.
    assert re.search(r"^ATTEMPT_TIMEOUT=60$", text, re.M), "the default try is 60 s"
    assert re.search(r"^DEADLINE_S=\$\(\(300 - 15\)\)$", text, re.M), "the unit's 300 s, less 15"
    text = re.sub(r"^ATTEMPT_TIMEOUT=.*$", f"ATTEMPT_TIMEOUT={attempt}", text, flags=re.M)
    text = re.sub(r"^DEADLINE_S=.*$", f"DEADLINE_S={deadline}", text, flags=re.M)
    text = re.sub(r"^RETRY_DELAY=.*$", "RETRY_DELAY=0", text, flags=re.M)
    path = tmp_path / "netroot-mount"
    path.write_text(text)
    path.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mount").write_text(FAKE_MOUNT)
    (bin_dir / "mount").chmod(0o755)
    return path


def _run(script: Path, nfs_seconds: int) -> subprocess.CompletedProcess[str]:
    inside = (
        "set -e\nmount -t tmpfs test-run /run\nmkdir -p /etc/netroot\n"
        f'NFS_SECONDS={nfs_seconds} PATH={script.parent / "bin"}:"$PATH" {script} 0123456789abcdef'
        " || echo rc=$?\n"
    )
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-c", inside],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_slow_mount_is_given_its_whole_try(tmp_path: Path) -> None:
    """A mount that takes 2 s succeeds at its first try when a try is 4 s (at 1 s a try every
    try would be cut short: the bad link's stall)."""
    done = _run(_script(tmp_path, attempt=4, deadline=60), nfs_seconds=2)
    mounted = re.findall(r"mounted \S+:(\S+) \(try (\d+),", done.stderr)
    # The export, then the version under it: each at its first try, none cut short.
    assert [t for _, t in mounted] == ["1", "1"], done.stdout + done.stderr
    assert mounted[1][0].endswith("/versions/0123456789abcdef"), done.stderr
    assert "timed out" not in done.stderr, done.stderr


def test_no_try_runs_past_the_units_deadline(tmp_path: Path) -> None:
    """A server that never answers: tries of 3 s, then one cut to what is left of the 5 s the
    unit allows, then the script's own line (exit 1), well before 10 tries."""
    done = _run(_script(tmp_path, attempt=3, deadline=5), nfs_seconds=1000)
    assert "rc=1" in done.stdout, done.stdout + done.stderr
    tries = re.findall(r"try (\d+)/10: .* timed out after (\d+)s", done.stderr)
    assert tries[0] == ("1", "3"), done.stderr
    assert 1 <= int(tries[-1][1]) < 3, done.stderr  # the last try: what was left
    assert "in the 5s the mount unit allows" in done.stderr, done.stderr
    assert len(tries) < 10, done.stderr
