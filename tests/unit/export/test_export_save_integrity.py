"""`docker save` archives: manifest checked, layers checked against the config's diff ids."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from netroot.export import verbs
from netroot.export.manifest import Layout
from tests.unit.export.edgekit import GOOD, assert_refused, export_file
from tests.unit.export.tarbuild import Spec, tar_bytes, write_docker_save


def test_hostile_layers_under_a_legitimate_config_are_refused(tmp_path: Path) -> None:
    real = [GOOD, [Spec("etc", "d"), Spec("etc/motd", data=b"hello")]]
    real_ids = write_docker_save(tmp_path / "real.tar", real, ["img:1"])
    ids = json.loads(_read(real_ids, "config.json"))["rootfs"]["diff_ids"]
    evil = [GOOD, [Spec("etc", "d"), Spec("etc/motd", data=b"pwned")]]
    hostile = write_docker_save(tmp_path / "evil.tar", evil, ["img:1"], diff_ids=ids)
    assert_refused(tmp_path, hostile, "'layer1/layer.tar'", "does not match", ids[1])
    # the real image is then a new version, not a no-op onto the hostile tree
    result = export_file(real_ids, tmp_path / "root")
    assert not result.noop
    motd = tmp_path / "root/img/current/etc/motd"
    assert motd.read_bytes() == b"hello"


def _read(archive: Path, name: str) -> bytes:
    with tarfile.open(archive) as tf:
        f = tf.extractfile(name)
        assert f is not None
        return f.read()


@pytest.mark.parametrize(
    ("manifest", "needle"),
    [
        ({"Config": "config.json"}, "list of objects"),
        ([{"Layers": ["layer0/layer.tar"]}], "Config must be a member name, not NoneType"),
        ([{"Config": 7, "Layers": []}], "Config must be a member name, not int"),
        ([{"Config": "config.json", "Layers": "layer0/layer.tar"}], "Layers must be a list"),
        ([{"Config": "config.json", "Layers": [["x"]]}], "Layers[0] must be a member name"),
        ([{"Config": "config.json", "Layers": ["../layer0/layer.tar"]}], "points outside"),
        ([{"Config": "/config.json", "Layers": []}], "points outside"),
        ([{"Config": "config.json", "Layers": ["nope.tar"]}], "'nope.tar' is not in the archive"),
        ([{"Config": "config.json", "Layers": ["link.tar"]}], "'link.tar' is a link inside"),
        ([{"Config": "adir", "Layers": []}], "'adir' is not a regular file"),
        ([{"Config": "config.json", "Layers": [], "RepoTags": "x"}], "RepoTags"),
    ],
)
def test_malformed_manifest_is_refused(tmp_path: Path, manifest: Any, needle: str) -> None:
    path = write_docker_save(tmp_path / "save.tar", [GOOD], ["img:1"], manifest=manifest)
    _append(path, _symlink("link.tar", "layer0/layer.tar"))
    adir = tarfile.TarInfo("adir")
    adir.type = tarfile.DIRTYPE
    _append(path, (adir, b""))
    assert_refused(tmp_path, path, "malformed docker save archive", needle)


def test_manifest_not_json_is_refused(tmp_path: Path) -> None:
    path = write_docker_save(tmp_path / "save.tar", [GOOD], ["img:1"])
    _append(path, _file("manifest.json", b"[{not json"))  # the last member of a name wins
    assert_refused(tmp_path, path, "manifest.json", "is not JSON")


def test_diff_ids_must_match_the_layers(tmp_path: Path) -> None:
    path = write_docker_save(tmp_path / "save.tar", [GOOD], ["img:1"], diff_ids=[])
    assert_refused(tmp_path, path, "1 layers but 0 rootfs.diff_ids")


def test_no_layers_is_an_empty_tree(tmp_path: Path) -> None:
    path = write_docker_save(tmp_path / "save.tar", [], ["img:1"])
    assert_refused(tmp_path, path, "empty tree")


def test_gzipped_layer_checked_against_its_uncompressed_diff_id(tmp_path: Path) -> None:
    import gzip

    path = write_docker_save(tmp_path / "save.tar", [GOOD], ["img:1"])
    layer = tar_bytes(GOOD)
    _append(path, _file("layer0/layer.tar", gzip.compress(layer)))  # same content, gzipped
    result = export_file(path, tmp_path / "root")
    assert verbs.verify(tmp_path / "root", "img")[1] == []
    assert result.manifest.source["kind"] == "docker-save"
    assert Layout(tmp_path / "root", "img").base.stat().st_mode & 0o777 == 0o700


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    return ti, data


def _symlink(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.SYMTYPE
    ti.linkname = target
    return ti, b""


def _append(path: Path, member: tuple[tarfile.TarInfo, bytes]) -> None:
    with tarfile.open(path, "a") as tf:
        ti, data = member
        tf.addfile(ti, io.BytesIO(data) if ti.isreg() else None)
