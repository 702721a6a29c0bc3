"""The lab's address plan and what it writes for others (inventory, known_hosts)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from netroot.errors import UsageError
from netroot.inventory import parse
from netroot.lab import render
from netroot.lab.plan import (
    HOST_ADDRESS,
    SERVER_ADDRESS,
    board_plan,
    default_arm64,
    make_plan,
    stable_mac,
)


def test_boards_get_consecutive_addresses_from_11() -> None:
    plan = make_plan(3, Path("/lab"))
    assert [b.name for b in plan.boards] == ["pi-01", "pi-02", "pi-03"]
    assert [b.address for b in plan.boards] == ["10.77.0.11", "10.77.0.12", "10.77.0.13"]
    assert len({b.mac for b in plan.boards}) == 3
    assert len({b.tap for b in plan.boards}) == 3
    assert HOST_ADDRESS not in {b.address for b in plan.boards}
    assert SERVER_ADDRESS not in {b.address for b in plan.boards}


def test_board_mac_encodes_its_address() -> None:
    assert board_plan(1).mac == "52:54:00:77:00:0b"
    assert board_plan(32).address == "10.77.0.42"


@pytest.mark.parametrize("n", [0, -1, 33])
def test_out_of_range_board_counts_are_usage_errors(n: int) -> None:
    with pytest.raises(UsageError):
        make_plan(n, Path("/lab"))


def test_export_root_defaults_under_the_lab_dir() -> None:
    assert make_plan(1, Path("/lab")).export_root == Path("/lab/export")
    assert make_plan(1, Path("/lab"), Path("/srv/x")).export_root == Path("/srv/x")


def test_inventory_matches_the_contract_and_validates() -> None:
    plan = make_plan(3, Path("/lab"), Path("/srv/export"))
    text = render.inventory_yaml(plan)
    inv = parse(yaml.safe_load(text), Path("inventory.yml"))
    assert list(inv.boards) == ["pi-01", "pi-02", "pi-03"]
    assert inv.boards["pi-02"].address == "10.77.0.12"
    assert inv.boards["pi-02"].image == "raspbian"
    assert inv.boards["pi-02"].qpu is False
    assert "lab" in inv.groups and set(inv.groups["lab"]) == set(inv.boards)
    server = inv.server
    assert (server.name, server.address, server.backend) == ("nfs-01", "10.77.0.2", "ganesha")
    assert server.export_root == "/srv/export"
    allvars = yaml.safe_load(text)["all"]["vars"]
    assert allvars["ansible_ssh_private_key_file"] == "/lab/id_ed25519"
    assert "StrictHostKeyChecking=yes" in allvars["ansible_ssh_common_args"]
    assert "UserKnownHostsFile=/lab/known_hosts" in allvars["ansible_ssh_common_args"]
    assert allvars["netroot_known_hosts"] == "/lab/known_hosts"


def test_lab_boards_are_reached_as_pi_with_sudo_and_the_server_as_root() -> None:
    from netroot.sshtarget import target_for

    plan = make_plan(2, Path("/lab"), Path("/srv/export"))
    inv = parse(yaml.safe_load(render.inventory_yaml(plan)), Path("inventory.yml"))
    board = target_for(inv.boards["pi-01"].host)
    assert (board.user, board.become, board.become_user, board.sudo) == ("pi", True, "root", True)
    assert inv.boards["pi-01"].host.vars["netroot_qpu_boot_config"] is True
    server = target_for(inv.server.host)
    assert (server.user, server.sudo) == ("root", False)


def test_known_hosts_lists_address_and_name_with_the_generated_key() -> None:
    text = render.known_hosts(
        {
            "pi-01": ("10.77.0.11", "ssh-ed25519 AAAAC3one root@pi-01"),
            "nfs-01": ("10.77.0.2", "ssh-ed25519 AAAAC3two root@nfs-01"),
        }
    )
    assert text.splitlines() == [
        "10.77.0.2,nfs-01 ssh-ed25519 AAAAC3two",
        "10.77.0.11,pi-01 ssh-ed25519 AAAAC3one",
    ]


def test_kernel_cmdline_gives_the_initramfs_the_board_address() -> None:
    from netroot.lab.host.boards import kernel_cmdline

    assert "netroot.ip=10.77.0.12/24" in kernel_cmdline(board_plan(2)).split()
    assert "console=ttyAMA0" in kernel_cmdline(board_plan(2)).split()


def test_lab_macs_are_stable_per_address() -> None:
    # A resumed board keeps its ARP cache: the server and host ends must not change MAC.
    assert stable_mac("10.77.0.1") == "52:54:00:77:00:01"
    assert stable_mac("10.77.0.2") == "52:54:00:77:00:02"
    assert board_plan(1).mac == "52:54:00:77:00:0b" == stable_mac(board_plan(1).address)
    macs = {stable_mac("10.77.0.1"), stable_mac("10.77.0.2")} | {
        board_plan(i).mac for i in range(1, 4)
    }
    assert len(macs) == 5


def test_a_mixed_lab_has_its_last_boards_64_bit_and_builds_for_both() -> None:
    plan = make_plan(3, Path("/lab"), arm64=1)
    assert [(b.name, b.arch) for b in plan.boards] == [
        ("pi-01", "armhf"),
        ("pi-02", "armhf"),
        ("pi-03", "arm64"),
    ]
    assert plan.arches == ("armhf", "arm64")
    assert make_plan(3, Path("/lab")).arches == ("armhf",)
    assert make_plan(2, Path("/lab"), arch="arm64").arches == ("arm64",)


@pytest.mark.parametrize(("boards", "arm64", "arch"), [(2, 3, "armhf"), (2, 1, "arm64")])
def test_arm64_boards_beyond_the_lab_or_in_an_arm64_lab_are_refused(
    boards: int, arm64: int, arch: str
) -> None:
    with pytest.raises(UsageError, match="--arm64"):
        make_plan(boards, Path("/lab"), arch=arch, arm64=arm64)


def test_the_64_bit_boards_take_the_torch_image_from_their_group() -> None:
    # As a lab admin writes it: a group of its own whose variables name the image, so each
    # image's rollout names its group (`--group lab`, `--group lab_arm64`).
    plan = make_plan(3, Path("/lab"), Path("/srv/export"), arm64=1)
    data = yaml.safe_load(render.inventory_yaml(plan))
    groups = data["all"]["children"]["boards"]["children"]
    assert groups["lab_arm64"]["vars"] == {
        "netroot_image": "raspbian-torch",
        "netroot_board_nfs_version": "3",  # no OPEN/CLOSE per file: Ganesha grants no delegation
    }
    assert "netroot_image" not in groups["lab_arm64"]["hosts"]["pi-03"]
    inv = parse(data, Path("inventory.yml"))
    assert {n: b.image for n, b in inv.boards.items()} == {
        "pi-01": "raspbian",
        "pi-02": "raspbian",
        "pi-03": "raspbian-torch",
    }
    assert set(inv.groups["lab"]) == {"pi-01", "pi-02"}
    assert set(inv.groups["lab_arm64"]) == {"pi-03"}
    # an all-64-bit lab (--arch arm64) is one group running the stock image, as before
    wide = parse(yaml.safe_load(render.inventory_yaml(make_plan(2, Path("/lab"), arch="arm64"))),
                 Path("inventory.yml"))  # fmt: skip
    assert {b.image for b in wide.boards.values()} == {
        "raspbian"
    } and "lab_arm64" not in wide.groups


@pytest.mark.parametrize(
    ("boards", "arch", "kind", "want"),
    [
        (3, "armhf", "qemu", 1),  # the default lab and the demo: one torch board, the last
        (2, "armhf", "qemu", 1),
        (1, "armhf", "qemu", 0),  # one board stays the 32-bit canary
        (3, "arm64", "qemu", 0),  # all 64-bit already: no "beside" board
        (10, "armhf", "light", 0),  # light boards are amd64
    ],
)
def test_the_cli_default_of_64_bit_boards_is_one_rule(
    boards: int, arch: str, kind: str, want: int
) -> None:
    assert default_arm64(boards, arch, kind) == want
    # the default is always a plan make_plan accepts
    make_plan(boards, Path("/tmp/lab"), None, arch, arm64=want, board_kind=kind)
