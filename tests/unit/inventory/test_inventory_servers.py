"""Several NFS servers in one inventory: each board on its own, one fleet home, pacing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from netroot.inventory import REBOOT_BATCH, InventoryError, parse

P = Path("inv.yml")


def two(boards: dict[str, Any], servers: dict[str, Any] | None = None) -> dict[str, Any]:
    hosts = servers or {"nfs-01": {"ansible_host": "10.77.0.2"},
                        "nfs-02": {"ansible_host": "10.77.0.3"}}  # fmt: skip
    return {
        "all": {
            "children": {
                "nfs_servers": {"hosts": hosts},
                "boards": {"hosts": boards},
            }
        }
    }


def test_each_board_names_its_server() -> None:
    inv = parse(
        two(
            {
                "pi-01": {"ansible_host": "10.77.0.11", "netroot_nfs_server": "nfs-01"},
                "pi-02": {"ansible_host": "10.77.0.12", "netroot_nfs_server": "nfs-02"},
                "pi-03": {"ansible_host": "10.77.0.13", "netroot_nfs_server": "nfs-02"},
            }
        ),
        P,
    )
    assert inv.boards["pi-01"].server == "nfs-01"
    assert inv.server_of("pi-02").name == "nfs-02"
    assert inv.server_of(inv.boards["pi-03"]).address == "10.77.0.3"
    assert [b.name for b in inv.boards_of("nfs-02")] == ["pi-02", "pi-03"]
    assert [s.name for s in inv.servers_for([inv.boards["pi-03"]])] == ["nfs-02"]
    # The fleet home: the first server in inventory order, when none is marked.
    assert inv.server.name == "nfs-01"


def test_one_server_is_every_board_default() -> None:
    data = two({"pi-01": {"ansible_host": "10.77.0.11"}}, {"nfs-01": {"ansible_host": "10.0.0.2"}})
    inv = parse(data, P)
    assert inv.boards["pi-01"].server == "nfs-01"
    assert inv.server.name == "nfs-01" and inv.server.reboot_batch == REBOOT_BATCH == 10


def test_several_servers_and_a_board_naming_none_is_refused() -> None:
    with pytest.raises(InventoryError) as err:
        parse(two({"pi-01": {"ansible_host": "10.77.0.11"}}), P)
    assert "host pi-01" in err.value.message and "netroot_nfs_server" in err.value.message
    assert "nfs-01, nfs-02" in err.value.message
    assert "set netroot_nfs_server" in err.value.hint


def test_unknown_server_is_refused() -> None:
    data = two({"pi-01": {"ansible_host": "10.77.0.11", "netroot_nfs_server": "nfs-09"}})
    with pytest.raises(InventoryError, match=r"host pi-01: netroot_nfs_server = 'nfs-09'.*nfs-01"):
        parse(data, P)


def test_group_var_places_boards() -> None:
    data = two({})
    data["all"]["children"]["boards"] = {
        "children": {
            "east": {"vars": {"netroot_nfs_server": "nfs-02"},
                     "hosts": {"pi-01": {"ansible_host": "10.77.0.11"}}},
        }
    }  # fmt: skip
    assert parse(data, P).boards["pi-01"].server == "nfs-02"


def test_fleet_home_marked_and_only_once() -> None:
    servers: dict[str, dict[str, Any]] = {
        "nfs-01": {"ansible_host": "10.0.0.2"},
        "nfs-02": {"ansible_host": "10.0.0.3", "netroot_fleet_home": True},
    }
    assert parse(two({}, servers), P).server.name == "nfs-02"
    servers["nfs-01"]["netroot_fleet_home"] = True
    with pytest.raises(InventoryError, match="netroot_fleet_home is true on several"):
        parse(two({}, servers), P)
    servers["nfs-01"]["netroot_fleet_home"] = "yes"
    with pytest.raises(InventoryError, match="host nfs-01: netroot_fleet_home"):
        parse(two({}, servers), P)


@pytest.mark.parametrize("value", [0, -1, "4", True, 2.5])
def test_reboot_batch_validated(value: object) -> None:
    servers = {"nfs-01": {"ansible_host": "10.0.0.2", "netroot_server_reboot_batch": value}}
    with pytest.raises(InventoryError, match="host nfs-01: netroot_server_reboot_batch"):
        parse(two({}, servers), P)


def test_reboot_batch_per_server() -> None:
    servers = {"nfs-01": {"ansible_host": "10.0.0.2", "netroot_server_reboot_batch": 3},
               "nfs-02": {"ansible_host": "10.0.0.3"}}  # fmt: skip
    inv = parse(two({}, servers), P)
    assert [s.reboot_batch for s in inv.servers.values()] == [3, 10]
