from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot.errors import Exit, UsageError
from netroot.inventory import InventoryError, load, parse
from netroot.sshtarget import target_for

P = Path("inv.yml")


def inv(boards: dict[str, Any], server: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "all": {
            "vars": {"ansible_user": "root"},
            "children": {
                "nfs_servers": {"hosts": {"nfs-01": server or {"ansible_host": "10.77.0.2"}}},
                "boards": {"children": {"lab": {"hosts": boards}}},
            },
        }
    }


def test_boards_groups_and_inherited_vars() -> None:
    data = inv({"pi-01": {"ansible_host": "10.77.0.11"}, "pi-02": {"ansible_host": "10.77.0.12"}})
    data["all"]["children"]["boards"]["vars"] = {"netroot_image": "lab-image"}
    result = parse(data, P)
    assert list(result.boards) == ["pi-01", "pi-02"]
    assert result.boards["pi-01"].image == "lab-image"
    assert result.boards["pi-01"].address == "10.77.0.11"
    assert target_for(result.hosts["pi-01"]).user == "root"
    assert {"all", "boards", "lab"} <= result.hosts["pi-02"].groups
    assert [b.name for b in result.resolve(["lab"])] == ["pi-01", "pi-02"]
    assert [b.name for b in result.resolve(["pi-02", "boards"])] == ["pi-02", "pi-01"]
    assert result.server.backend == "kernel"
    assert result.server.export_root == "/srv/netroot"


@pytest.mark.parametrize(
    "hostvars,field",
    [
        ({"ansible_host": "pi.example"}, "netroot_address"),
        ({"ansible_host": "10.0.0.1", "netroot_qpu": "yes"}, "netroot_qpu"),
        ({"ansible_host": "10.0.0.1", "netroot_mac": "nope"}, "netroot_mac"),
        ({"ansible_host": "10.0.0.1", "netroot_version": "latest"}, "netroot_version"),
        ({"ansible_host": "10.0.0.1", "netroot_image": "Bad Name"}, "netroot_image"),
    ],
)
def test_bad_field_names_host_and_field(hostvars: dict[str, Any], field: str) -> None:
    with pytest.raises(InventoryError) as err:
        parse(inv({"pi-01": hostvars}), P)
    assert "host pi-01" in str(err.value) and field in str(err.value)
    assert err.value.code == Exit.USAGE


def test_duplicate_address_refused() -> None:
    data = inv({"pi-01": {"ansible_host": "10.0.0.1"}, "pi-02": {"ansible_host": "10.0.0.1"}})
    with pytest.raises(InventoryError, match="also pi-01"):
        parse(data, P)


def test_server_backend_validated() -> None:
    with pytest.raises(InventoryError, match="netroot_nfs_backend"):
        parse(inv({}, {"ansible_host": "10.0.0.2", "netroot_nfs_backend": "nfsd"}), P)


def test_remote_export_root_flag() -> None:
    assert not parse(inv({}), P).server.remote
    remote = {"ansible_host": "10.0.0.2", "netroot_export_remote": True}
    assert parse(inv({}, remote), P).server.remote
    with pytest.raises(InventoryError, match=r"netroot_export_remote.*true or false"):
        parse(inv({}, remote | {"netroot_export_remote": "yes"}), P)
    # A remote root has no path here: the CLI opens it over SSH (netroot.fleet.where).
    from netroot.fleet.root import LocalRoot
    from netroot.fleet.rules import Fleet
    from netroot.fleet.where import RemoteRoot, open_fleet

    with pytest.raises(UsageError, match="export root is on that server"):
        _ = Fleet(parse(inv({}, remote), P)).root
    assert isinstance(open_fleet(parse(inv({}, remote), P)).store, RemoteRoot)
    assert isinstance(open_fleet(parse(inv({}), P)).store, LocalRoot)


def test_unknown_target_is_usage_error() -> None:
    result = parse(inv({"pi-01": {"ansible_host": "10.0.0.1"}}), P)
    with pytest.raises(UsageError) as err:
        result.resolve(["pi-09"])
    assert "pi-09" in str(err.value)


def test_load_missing_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found"):
        load(tmp_path / "nope.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("all: [\n")
    with pytest.raises(InventoryError, match="not a YAML inventory Ansible can read"):
        load(bad)
    good = tmp_path / "good.yml"
    good.write_text(yaml.safe_dump(inv({"pi-01": {"ansible_host": "10.0.0.1"}})))
    assert list(load(good).boards) == ["pi-01"]
