"""A stock Raspberry Pi OS board (issue 13's Show): `pi` with sudo, root refused, armv7l, the
QPU's boot config managed in /boot/firmware/config.txt with a reboot, a first rollout that
prepares its stock boards at once (one round of reboots, before the canary), and a user without
passwordless sudo stopped by the preflight before anything changes."""

from __future__ import annotations

import fcntl
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from netroot.errors import Exit
from netroot.fleet.state import load_state
from netroot.lab.plan import NOSUDO_USER
from tests.e2e.conftest import LabHandle
from tests.e2e.helpers import BASE_IMAGE, NETROOT, env_for, export, netroot, variant_image

pytestmark = pytest.mark.e2e

BOARD = "pi-03"  # the other modules use pi-01/pi-02 for their own cases first
CONFIG = "/boot/firmware/config.txt"


@pytest.fixture(scope="module")
def stock(lab: LabHandle) -> Iterator[tuple[LabHandle, str]]:
    if subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True).returncode:
        pytest.skip(f"{BASE_IMAGE} not built (netroot lab up builds it)")
    with (lab.lab_dir / ".ganesha.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield lab, export(lab.inventory, BASE_IMAGE)


def _desired(lab: LabHandle, current: str) -> str:
    """The fleet's one rule for BOARD: what a rollout assigned it (earlier modules roll out to
    the lab's boards), else the image's `current`."""
    assigned = load_state(lab.export_root).board(BOARD).assigned
    return assigned or current


def _boot_id(lab: LabHandle, board: str = BOARD) -> str:
    return lab.ssh(board, "cat /proc/sys/kernel/random/boot_id").stdout.strip()


def _restore_stock_config(lab: LabHandle, board: str = BOARD) -> None:
    """Put config.txt back as Bookworm ships it (what netroot commented, uncommented)."""
    lab.ssh(
        board,
        f"sed -i -e '/^# BEGIN netroot qpu boot config$/,/^# END netroot qpu boot config$/d' "
        f"-e 's/^#netroot-qpu: //' {CONFIG}",
    )


def test_board_is_a_stock_32_bit_pi_reached_as_pi_with_root_refused(lab: LabHandle) -> None:
    assert lab.targets[BOARD].user == "pi" and lab.targets[BOARD].sudo
    assert lab.ssh(BOARD, "uname -m", user="pi").stdout.strip() == "armv7l"
    assert lab.ssh(BOARD, "id -u").stdout.strip() == "0"  # through sudo -n
    refused = lab.ssh(BOARD, "true", check=False, user="root")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    stock = lab.ssh(BOARD, "cat /boot/firmware/cmdline.txt", user="pi").stdout
    assert "console=serial0,115200" in stock and "rootwait" in stock


def test_provision_manages_config_txt_reboots_and_comes_back_on_its_version(
    stock: tuple[LabHandle, str],
) -> None:
    lab, version = stock
    _restore_stock_config(lab)
    assert "\ndtoverlay=vc4-kms-v3d\n" in lab.ssh(BOARD, f"cat {CONFIG}").stdout
    boot_before = _boot_id(lab)

    plan = netroot(lab.inventory, "provision", BOARD, "--check", "--diff", "--json")
    assert plan.returncode == 0, plan.stderr[-3000:]
    diffs = "".join(c["diff"] for c in json.loads(plan.stdout)["changes"])
    assert "+#netroot-qpu: dtoverlay=vc4-kms-v3d" in diffs and "+gpu_mem=128" in diffs
    assert "\ndtoverlay=vc4-kms-v3d\n" in lab.ssh(BOARD, f"cat {CONFIG}").stdout
    assert _boot_id(lab) == boot_before  # a plan reboots nothing

    first = netroot(lab.inventory, "provision", BOARD, "--json")
    assert first.returncode == 0, first.stderr[-3000:]
    result = json.loads(first.stdout)
    assert result["hosts"][BOARD]["state"] == "changed"
    assert result["mounted"][BOARD] == _desired(lab, version)
    config = lab.ssh(BOARD, f"cat {CONFIG}").stdout
    assert "\n#netroot-qpu: dtoverlay=vc4-kms-v3d\n" in config
    assert "\ndtoverlay=vc4-kms-v3d\n" not in config
    assert config.endswith("[all]\ngpu_mem=128\n# END netroot qpu boot config\n")
    assert _boot_id(lab) != boot_before  # rebooted
    assert lab.ssh(BOARD, "cat /run/netroot/mounted").stdout.strip() == _desired(lab, version)

    boot_after = _boot_id(lab)
    second = netroot(lab.inventory, "provision", BOARD, "--json")
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout)["hosts"][BOARD]["state"] == "ok"
    assert _boot_id(lab) == boot_after
    assert lab.ssh(BOARD, f"cat {CONFIG}").stdout == config


def _nosudo_inventory(lab: LabHandle, tmp: Path) -> Path:
    data = yaml.safe_load(lab.inventory.read_text())
    data["all"]["children"]["boards"]["children"]["lab"]["hosts"][BOARD]["ansible_user"] = (
        NOSUDO_USER
    )
    path = tmp / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    "command",
    [
        ("provision", BOARD),
        ("smoke", BOARD),
        ("rollout", "NOSUDO_IMAGE", "--name", "raspbian", "--group", BOARD, "--yes"),
    ],
    ids=["provision", "smoke", "rollout"],
)
def test_user_without_passwordless_sudo_gets_one_line_and_nothing_changes(
    stock: tuple[LabHandle, str], tmp_path: Path, command: tuple[str, ...]
) -> None:
    lab, _ = stock
    inventory = _nosudo_inventory(lab, tmp_path)
    boot_id = "/proc/sys/kernel/random/boot_id"
    watched = f"cat /etc/netroot/assigned /run/netroot/mounted {CONFIG} {boot_id}"
    before = lab.ssh(BOARD, watched).stdout
    exports_before = lab.ssh("nfs-01", "cat /etc/ganesha/ganesha.conf").stdout
    if "NOSUDO_IMAGE" in command:
        # An image no board runs yet, so the rollout has a board to switch (a lab where BASE_IMAGE
        # already runs green on BOARD, as this module leaves it, would have nothing to do).
        image = variant_image("e2e-nosudo", "nosudo")
        command = tuple(image if word == "NOSUDO_IMAGE" else word for word in command)
    proc = netroot(inventory, *command)
    assert proc.returncode == Exit.USAGE, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert f"{BOARD}: {NOSUDO_USER}@" in errors[0] and "NOPASSWD" in errors[0]
    assert "Traceback" not in proc.stderr
    assert lab.ssh(BOARD, watched).stdout == before
    assert lab.ssh("nfs-01", "cat /etc/ganesha/ganesha.conf").stdout == exports_before


def _make_stock(lab: LabHandle, board: str) -> None:
    """Take netroot off a board again: no version, no netroot-mount, config.txt as shipped."""
    lab.ssh(
        board,
        "/usr/local/sbin/netroot-mount --umount; systemctl disable --quiet netroot-mount.service; "
        "rm -f /etc/systemd/system/netroot-mount.service /usr/local/sbin/netroot-mount "
        "/usr/local/sbin/netroot-chroot /etc/netroot/assigned /run/netroot/mounted; "
        "systemctl daemon-reload",
    )
    _restore_stock_config(lab, board)


def test_first_rollout_prepares_stock_boards_at_once_then_canary(
    stock: tuple[LabHandle, str], tmp_path: Path
) -> None:
    """Two stock boards, canary then the other (last in this module: it leaves both boards on
    the version, smoked green): both get their boot config and reboot in one round before the
    canary; the canary's and the batch's switches reboot nothing, and the
    other board runs no version until its batch."""
    lab, version = stock
    boards = ["pi-02", BOARD]
    for board in boards:
        _make_stock(lab, board)
    before = {b: _boot_id(lab, b) for b in boards}
    data = yaml.safe_load(lab.inventory.read_text())
    data["all"]["children"]["boards"]["children"]["fresh"] = {"hosts": dict.fromkeys(boards)}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump(data))
    args = ["rollout", BASE_IMAGE, "--name", "raspbian", "--group", "fresh", "--canary", "1"]
    proc = subprocess.Popen(
        [*NETROOT, *args, "--batch", "100%", "--yes", "--json"], env=env_for(inventory),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None and proc.stdout is not None
    at_canary: dict[str, str] = {}
    other_mounted = "?"
    err = []
    for line in proc.stderr:
        err.append(line)
        if line.startswith("canary:") and not at_canary:
            at_canary = {b: _boot_id(lab, b) for b in boards}
            canary = line.split()[1]
            other = next(b for b in boards if b != canary)
            other_mounted = lab.ssh(other, "cat /run/netroot/mounted", check=False).stdout
    out = proc.stdout.read()
    assert proc.wait() == 0, "".join(err)[-3000:]
    stderr = "".join(err)
    assert "prepare: pi-02, pi-03" in stderr, stderr[-3000:]
    result = json.loads(out)
    assert result["plan"]["prepare"] == [boards]
    assert at_canary, stderr[-3000:]
    for board in boards:
        assert at_canary[board] != before[board]  # the prepare round rebooted it
        assert _boot_id(lab, board) == at_canary[board]  # its batch did not
        assert lab.ssh(board, "cat /run/netroot/mounted").stdout.strip() == version
        config = lab.ssh(board, f"cat {CONFIG}").stdout
        assert config.endswith("\ngpu_mem=128\n# END netroot qpu boot config\n")
    assert other_mounted.strip() == ""  # prepared, but no version before its batch
