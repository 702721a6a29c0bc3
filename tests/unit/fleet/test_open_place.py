"""Where a version lives is chosen once (netroot.fleet.where.open_place / open_root): this
host's root, one server's over SSH, or several servers; each object answers every verb."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from netroot.errors import UsageError
from netroot.export.onservers import Servers
from netroot.fleet.root import LocalRoot
from netroot.fleet.where import DEFAULT_ROOT, RemoteRoot, open_fleet, open_place
from netroot.inventory import Inventory, parse


def _inventory(tmp: Path, servers: dict[str, dict[str, Any]], boards: dict[str, str]) -> Inventory:
    hosts = {
        n: {"ansible_host": f"10.77.0.{2 + i}", **v} for i, (n, v) in enumerate(servers.items())
    }
    listed = {
        b: {"ansible_host": f"10.77.0.{11 + i}", "netroot_image": image, "netroot_nfs_server": s}
        for i, (b, (s, image)) in enumerate((b, v.split("/")) for b, v in boards.items())
    }
    data = {"all": {"children": {"nfs_servers": {"hosts": hosts}, "boards": {"hosts": listed}}}}
    return parse(data, tmp / "inventory.yml")


def test_root_given_or_no_inventory_is_this_hosts_root(tmp_path: Path) -> None:
    remote = _inventory(tmp_path, {"nfs-01": {"netroot_export_remote": True}}, {})
    assert open_place(remote, tmp_path) == LocalRoot(tmp_path)  # --root wins over the inventory
    assert open_place(None, None) == LocalRoot(DEFAULT_ROOT)


def test_one_server_is_its_root_here_or_over_ssh(tmp_path: Path) -> None:
    local = _inventory(tmp_path, {"nfs-01": {"netroot_export_root": str(tmp_path / "r")}}, {})
    assert open_place(local, None) == LocalRoot(tmp_path / "r")
    remote = _inventory(tmp_path, {"nfs-01": {"netroot_export_remote": True}}, {})
    place = open_place(remote, None)
    assert isinstance(place, RemoteRoot) and place.where == "nfs-01:/srv/netroot"
    assert place.label == "nfs-01"


def test_several_servers_are_one_place_an_export_goes_where_the_image_is_served(
    tmp_path: Path,
) -> None:
    servers: dict[str, dict[str, Any]] = {
        "nfs-01": {"netroot_export_root": str(tmp_path / "one")},
        "nfs-02": {"netroot_export_remote": True},
        "nfs-03": {"netroot_export_root": str(tmp_path / "three")},
    }
    inv = _inventory(tmp_path, servers, {"pi-01": "nfs-02/raspbian", "pi-02": "nfs-03/raspbian"})
    place = open_place(inv, None)
    assert isinstance(place, Servers) and list(place.roots) == ["nfs-01", "nfs-02", "nfs-03"]
    assert isinstance(place.roots["nfs-02"], RemoteRoot)
    assert list(place.serving("raspbian")) == ["nfs-02", "nfs-03"]
    assert list(place.serving("other")) == ["nfs-01", "nfs-02", "nfs-03"]  # served nowhere: all
    # The fleet's roots are the same kind of object, one per server.
    fleet = open_fleet(inv)
    assert [type(fleet.root_of(s)) for s in inv.servers] == [LocalRoot, RemoteRoot, LocalRoot]


def test_this_hosts_root_answers_every_verb(tmp_path: Path) -> None:
    from netroot.export import sources
    from netroot.export.request import ExportOptions, Source
    from tests.unit.export.tarbuild import Spec, write_tar

    archive = write_tar(tmp_path / "a.tar", [Spec("etc", kind="d"), Spec("etc/x", data=b"x")])
    info = sources.inspect_archive(archive)
    source = Source(info, lambda w: sources.apply_archive(info, w))
    place = LocalRoot(tmp_path / "root")
    done = place.export(source, "img", ExportOptions())
    vid = done.result.manifest.version
    assert done.view().json["path"] == str(tmp_path / "root" / "img" / "versions" / vid)  # type: ignore[index]
    assert [m.version for m in place.versions("img").found] == [vid]
    assert place.current("img") == vid
    assert place.verify("img", None).differences == []
    assert place.prune("img", 1, {}, dry_run=True).plan.kept == {
        vid: ["current", "among the 1 newest"]
    }
    assert place.repair(source, "img", ExportOptions()).result.done == []
    unknown = place.versions("nothing")  # read without failing (several servers list it so)
    with pytest.raises(UsageError, match="no export named 'nothing'"):
        unknown.view()  # shown alone, it is an error
