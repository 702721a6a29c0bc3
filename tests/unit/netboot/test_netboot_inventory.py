"""`netroot_boot: sd|netboot` in the inventory: checked on load, one line naming host and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot.bootmode import NetBoot, SdBoot
from netroot.errors import UsageError
from netroot.inventory import Inventory, InventoryError, load
from netroot.netboot import dnsmasq
from netroot.provision.plan import build

from .conftest import INVENTORY


def _load(tmp_path: Path, **boards: dict[str, Any]) -> Inventory:
    data = yaml.safe_load(INVENTORY)
    hosts = data["all"]["children"]["boards"]["hosts"]
    for name, changes in boards.items():
        hosts[name] = {k: v for k, v in {**hosts.get(name, {}), **changes}.items() if v is not None}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return load(path)


def test_boot_mode_defaults_to_sd(inventory: Inventory) -> None:
    assert inventory.boards["pi-03"].boot == "sd" and isinstance(
        inventory.boards["pi-03"].mode, SdBoot
    )
    assert isinstance(inventory.boards["pi-01"].mode, NetBoot)
    assert inventory.boards["pi-01"].mac == "b8:27:eb:00:00:01"  # lowercased


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"netroot_boot": "usb"}, r"host pi-01: netroot_boot = 'usb': expected sd or netboot"),
        ({"netroot_mac": None}, r"host pi-01: netroot_mac = None: expected set: netroot_boot is"),
        ({"netroot_serial": None}, r"host pi-01: netroot_serial = None: expected set"),
        ({"netroot_serial": "1a2b3c0"}, r"netroot_serial = '1a2b3c0': expected 8 hex digits"),
        ({"netroot_serial": 12345678}, r"netroot_serial = 12345678: expected 8 hex digits, quoted"),
        ({"netroot_mac": "b8:27:eb:00:00"}, r"host pi-01: netroot_mac = 'b8:27:eb:00:00'"),
        ({"netroot_mac": "B8:27:EB:00:00:02"}, r"pi-0[12]: netroot_mac b8:27:eb:00:00:02 is also"),
        ({"netroot_serial": "1A2B3C02"}, r"pi-0[12]: netroot_serial 1a2b3c02 is also pi-0[12]'s"),
    ],
)
def test_bad_netboot_values_are_one_line_naming_host_and_field(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(InventoryError, match=message) as err:
        _load(tmp_path, **{"pi-01": changes})
    assert "\n" not in err.value.message


def test_an_sd_board_may_carry_a_mac_without_a_serial(tmp_path: Path) -> None:
    inv = _load(tmp_path, **{"pi-03": {"netroot_mac": "52:54:00:00:00:03"}})
    assert inv.boards["pi-03"].mac == "52:54:00:00:00:03" and inv.boards["pi-03"].serial is None


def test_the_server_needs_dnsmasq_settings_when_a_board_netboots(inventory: Inventory) -> None:
    with pytest.raises(UsageError) as err:
        build(inventory, ["pi-01"])
    assert "host nfs-01: netboot interface ''" in err.value.message
    assert "netroot_dnsmasq_interface" in err.value.hint and "pi-01, pi-02" in err.value.hint


def test_server_config_reads_the_servers_vars(tmp_path: Path) -> None:
    data = yaml.safe_load(INVENTORY)
    server = data["all"]["children"]["nfs_servers"]["hosts"]["nfs-01"]
    server.update(netroot_dnsmasq_interface="br0", netroot_dnsmasq_network="10.88.0.0/24",
                  netroot_tftp_root="/srv/tftp/", netroot_dnsmasq_reply_delay=3)  # fmt: skip
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    inv = load(path)
    config = dnsmasq.server_config(inv.server, list(inv.boards.values()))
    assert (config.interface, str(config.network), config.tftp_root, config.reply_delay) == (
        "br0", "10.88.0.0/24", "/srv/tftp", 3)  # fmt: skip
    assert [b.name for b in config.boards] == ["pi-01", "pi-02"]
    build(inv, ["pi-01"])  # the plan accepts it
    server["netroot_dnsmasq_network"] = "10.88.0.5/24"  # host bits: the template needs the net
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(UsageError, match=r"host nfs-01: netboot network '10\.88\.0\.5/24'"):
        build(load(path), ["pi-01"])
