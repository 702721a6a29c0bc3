"""Light boards (`lab up --board-kind light`): their plan, their inventory, and the option
parsing of their userspace mount.nfs (images/light-board/mount.nfs)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from netroot.errors import UsageError
from netroot.inventory import parse
from netroot.lab import render, state
from netroot.lab.plan import (
    FIRST_NETBOOT,
    LIGHT_EXPORT,
    MAX_LIGHT,
    SERVER_ADDRESS,
    light_plan,
    make_plan,
)
from netroot.paths import project_file


def test_light_boards_take_their_own_hundred_addresses() -> None:
    plan = make_plan(MAX_LIGHT, Path("/lab"), board_kind="light")
    assert plan.light and plan.arch == "amd64"
    names = [b.name for b in plan.boards]
    assert names[0] == "lb-001" and names[-1] == "lb-100"
    addresses = [b.address for b in plan.boards]
    assert addresses[0] == "10.77.0.101" and addresses[-1] == "10.77.0.200"
    assert len(set(addresses)) == len({b.mac for b in plan.boards}) == MAX_LIGHT
    # above every emulated board (pi-NN up to .42) and diskless one (nb-NN from .51)
    assert min(int(a.rsplit(".", 1)[1]) for a in addresses) > FIRST_NETBOOT + 8
    assert SERVER_ADDRESS not in addresses
    # each board's veth on the lab bridge: a Linux interface name (at most 15 characters)
    assert all(len(b.tap) <= 15 for b in plan.boards)
    assert len({b.tap for b in plan.boards}) == MAX_LIGHT


def test_the_default_kind_is_still_the_emulated_boards() -> None:
    plan = make_plan(2, Path("/lab"))
    assert not plan.light and [b.name for b in plan.boards] == ["pi-01", "pi-02"]


@pytest.mark.parametrize(
    ("kwargs", "what"),
    [
        ({"boards": 0}, "--boards 0"),
        ({"boards": MAX_LIGHT + 1}, f"--boards {MAX_LIGHT + 1}"),
        ({"boards": 2, "netboot": 1}, "--board-kind light with --netboot"),
        ({"boards": 2, "server": "kernel"}, "--board-kind light with --netboot or --server"),
    ],
)
def test_what_a_light_lab_cannot_be_is_a_usage_error(kwargs: dict[str, object], what: str) -> None:
    with pytest.raises(UsageError) as err:
        make_plan(lab_dir=Path("/lab"), board_kind="light", **kwargs)  # type: ignore[arg-type]
    assert what in str(err.value)


def test_an_unknown_board_kind_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--board-kind tiny: unknown"):
        make_plan(2, Path("/lab"), board_kind="tiny")


def test_a_light_lab_inventory_validates_and_runs_the_light_export(tmp_path: Path) -> None:
    plan = make_plan(25, tmp_path, board_kind="light")
    inv = parse(yaml.safe_load(render.inventory_yaml(plan)), tmp_path / "inventory.yml")
    assert list(inv.boards) == [f"lb-{i:03d}" for i in range(1, 26)]
    assert inv.boards["lb-007"].image == LIGHT_EXPORT
    assert set(inv.groups["lab"]) == set(inv.boards)
    data = render.inventory(plan)
    hosts = data["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    assert {h["netroot_image"] for h in hosts.values()} == {LIGHT_EXPORT}
    assert hosts["lb-025"]["ansible_host"] == light_plan(25).address
    assert {h["netroot_board_nfs_version"] for h in hosts.values()} == {3}
    emulated = render.inventory(make_plan(2, tmp_path))["all"]["children"]["boards"]
    assert "netroot_board_nfs_version" not in emulated["children"]["lab"]["hosts"]["pi-01"]


def test_the_lab_state_remembers_the_board_kind(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    state.save(path, 50, tmp_path / "export", "amd64", board_kind="light")
    assert state.load(path)["board_kind"] == "light"


def _mount_nfs() -> ModuleType:
    path = project_file("images", "light-board", "mount.nfs")
    loader = importlib.machinery.SourceFileLoader("light_mount_nfs", str(path))
    spec = importlib.util.spec_from_loader("light_mount_nfs", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_mount_nfs_reads_the_command_line_mount_gives_it() -> None:
    m = _mount_nfs()
    spec, target, options = m.parse(
        ["10.77.0.2:/srv/export/light", "/run/netroot/shared", "-n", "-o", "ro,vers=4.1,nocto"]
    )
    assert (spec, target) == ("10.77.0.2:/srv/export/light", "/run/netroot/shared")
    assert options == {"ro": "", "vers": "4.1", "nocto": ""}
    with pytest.raises(SystemExit, match=r"usage: mount\.nfs"):
        m.parse(["/no/server/here", "/mnt"])


@pytest.mark.parametrize(
    ("options", "want"),
    [
        ({}, ["4.1", "4.0", "3"]),
        ({"vers": "4"}, ["4.1", "4.0", "3"]),
        ({"nfsvers": "3"}, ["3"]),
        ({"vers": "4.1"}, ["4.1"]),
        ({"vers": "4.2"}, ["4.1"]),
    ],
)
def test_mount_nfs_asks_nfs_rs_for_the_versions_nfs5_names(
    options: dict[str, str], want: list[str]
) -> None:
    assert _mount_nfs().versions(options) == want


def test_mount_nfs_refuses_a_writable_mount(capsys: pytest.CaptureFixture[str]) -> None:
    assert _mount_nfs().main(["10.77.0.2:/x", "/mnt", "-o", "vers=4.1"]) == 32
    assert "only read-only mounts" in capsys.readouterr().err
