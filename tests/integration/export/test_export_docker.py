"""`netroot export` against the real Docker engine: fidelity, save archives, reuse, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.export import dockerkit

pytestmark = pytest.mark.integration

# Docker's init layer: created per container with the creation time (two containers differ).
INIT_LAYER = {
    "",
    ".dockerenv",
    "etc",
    "etc/hostname",
    "etc/hosts",
    "etc/resolv.conf",
    "etc/mtab",
    "dev",
    "dev/console",
    "dev/pts",
    "dev/shm",
    "proc",
    "sys",
}


def netroot(*args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "NETROOT_INVENTORY"}
    base |= {"NETROOT_HOME": str(home), "NO_COLOR": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "netroot", *args],
        capture_output=True,
        text=True,
        env=base,
        check=False,
        timeout=900,
    )


def export_json(tmp_path: Path, *args: str) -> dict[str, Any]:
    p = netroot("export", *args, "--root", str(tmp_path / "root"), "--json", home=tmp_path)
    assert p.returncode == 0, p.stderr
    out: dict[str, Any] = json.loads(p.stdout)
    return out


def masked(w: dockerkit.Walk) -> dockerkit.Walk:
    """Init-layer paths without their mtimes (field 4), which differ per container."""
    return {p: (*v[:4], 0, *v[5:]) if p in INIT_LAYER else v for p, v in w.items()}


def leftover_paths(out: dict[str, Any]) -> set[str]:
    kept = "kept empty placeholder"
    return {c["path"].lstrip("/") for c in out["leftovers"] if c["action"] != kept}


@pytest.mark.parametrize(("flags", "via"), [([], "layer-dirs"), (["--stream"], "docker-export")])
def test_fidelity_against_docker_export_and_tar(
    images: Path, docker_client: Any, tmp_path: Path, flags: list[str], via: str
) -> None:
    out = export_json(tmp_path, dockerkit.FIDELITY, "--name", "fid", *flags)
    assert out["source"]["via"] == via
    ours = dockerkit.walk(Path(out["path"]))
    dockerkit.reference_extract(docker_client, dockerkit.FIDELITY, tmp_path / "ref")
    ref = dockerkit.walk(tmp_path / "ref")
    changed = leftover_paths(out)
    assert changed == {
        ".dockerenv",
        "etc/hosts",
        "etc/ssh/ssh_host_ed25519_key",
        "etc/ssh/ssh_host_ed25519_key.pub",
    }
    assert dockerkit.differences(masked(ours), masked(ref), skip=changed) == []
    # The cases that matter, named, so a regression says what broke.
    v = Path(out["path"])
    assert os.lstat(v / "usr/bin/suid").st_mode & 0o7777 == 0o4755
    assert os.lstat(v / "usr/bin/both").st_mode & 0o7777 == 0o6755
    assert os.lstat(v / "tmp").st_mode & 0o7777 == 0o1777
    assert os.getxattr(v / "bin/ping", "security.capability").hex().startswith("01000002")
    assert os.lstat(v / "usr/bin/linked").st_ino == os.lstat(v / "bin/linked3").st_ino
    assert os.major(os.lstat(v / "dev/loop9").st_rdev) == 7
    assert os.readlink(v / "usr/bin/env") == "/bin/busybox"
    assert not (v / ".dockerenv").exists()
    assert out["architecture"] == "amd64" and out["repo_tags"] == [dockerkit.FIDELITY]


def test_idempotent_reexport(images: Path, tmp_path: Path) -> None:
    first = export_json(tmp_path, dockerkit.FIDELITY, "--name", "fid")
    second = export_json(tmp_path, dockerkit.FIDELITY, "--name", "fid")
    assert second["noop"] is True and second["version"] == first["version"]
    assert second["tree_hash"] == first["tree_hash"]
    assert sorted(os.listdir(tmp_path / "root/fid/versions")) == [
        first["version"],
        first["version"] + ".json",
    ]


def test_docker_save_archive_with_whiteouts(
    images: Path, docker_client: Any, tmp_path: Path
) -> None:
    archive = tmp_path / "layered.tar"
    with archive.open("wb") as f:
        for chunk in docker_client.images.get(dockerkit.LAYERED).save(named=True):
            f.write(chunk)
    out = export_json(tmp_path, str(archive), "--name", "saved")
    assert out["source"]["kind"] == "docker-save"
    v = Path(out["path"])
    assert not (v / "var/lib/gone").exists() and (v / "var/lib").is_dir()
    assert not (v / "opt/keep").exists()
    assert sorted(os.listdir(v / "opt/replaced")) == ["new"]  # opaque: old one hidden
    assert (v / "etc/tagged.conf").read_text() == "changed\n"
    assert (v / "top").read_text() == "top\n"
    # Everything outside docker's init layer matches `docker export` of the same image.
    dockerkit.reference_extract(docker_client, dockerkit.LAYERED, tmp_path / "ref")
    ref = dockerkit.walk(tmp_path / "ref")
    ours = dockerkit.walk(v)
    skip = INIT_LAYER | leftover_paths(out) | {"dev/pts", "dev/shm"}
    # mkdir in RUN left /opt/replaced with the build's own time in both: compared as is.
    assert dockerkit.differences(ours, ref, skip=skip) == []


def test_reexport_reuses_unchanged_files(images: Path, docker_client: Any, tmp_path: Path) -> None:
    # The first through the stream: its origins (from the layer dirs) must serve the second.
    first = export_json(tmp_path, dockerkit.FIDELITY, "--name", "img", "--stream")
    second = export_json(tmp_path, dockerkit.LAYERED, "--name", "img")
    assert first["source"]["via"] == "docker-export"
    assert second["source"]["via"] == "layer-dirs"
    # The re-export read the layer dirs (shared lower layer): still exactly docker export.
    dockerkit.reference_extract(docker_client, dockerkit.LAYERED, tmp_path / "ref")
    ours, ref = dockerkit.walk(Path(second["path"])), dockerkit.walk(tmp_path / "ref")
    assert dockerkit.differences(masked(ours), masked(ref), skip=leftover_paths(second)) == []
    assert second["reused_from"] == first["version"] and second["reused_files"] > 10
    v1, v2 = Path(first["path"]), Path(second["path"])
    assert os.lstat(v1 / "opt/random.bin").st_ino == os.lstat(v2 / "opt/random.bin").st_ino
    assert os.lstat(v1 / "etc/tagged.conf").st_ino != os.lstat(v2 / "etc/tagged.conf").st_ino
    assert (v1 / "etc/tagged.conf").read_bytes() == b"x=1"  # the old version is untouched
    for vid in (first["version"], second["version"]):
        p = netroot("verify", f"img@{vid}", "--root", str(tmp_path / "root"), home=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
    listed = netroot("versions", "img", "--root", str(tmp_path / "root"), "--json", home=tmp_path)
    assert json.loads(listed.stdout)["current"] == second["version"]


def test_unknown_image_and_unreachable_daemon(tmp_path: Path, docker_client: Any) -> None:
    p = netroot("export", "netroot-test/does-not-exist:1", "--root", str(tmp_path), home=tmp_path)
    assert p.returncode == 2
    assert "netroot-test/does-not-exist:1" in p.stderr and "never pulls" in p.stderr
    p = netroot(
        "export",
        "busybox:latest",
        "--root",
        str(tmp_path),
        home=tmp_path,
        DOCKER_HOST=f"unix://{tmp_path}/no-such.sock",
    )
    assert p.returncode == 5 and "Docker engine unreachable" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 2  # one line + hint


def test_docker_save_with_a_swapped_layer_is_refused(
    images: Path, docker_client: Any, tmp_path: Path
) -> None:
    # A real `docker save` archive, its top layer replaced by another one (one more file),
    # manifest and config kept: the config's diff id no longer matches, so it is refused.
    import io
    import tarfile

    real = tmp_path / "real.tar"
    with real.open("wb") as f:
        for chunk in docker_client.images.get(dockerkit.LAYERED).save(named=True):
            f.write(chunk)
    with tarfile.open(real) as tf:
        manifest = json.loads(tf.extractfile("manifest.json").read())  # type: ignore[union-attr]
        top = manifest[0]["Layers"][-1]
        members = [(ti, tf.extractfile(ti).read() if ti.isreg() else b"") for ti in tf]  # type: ignore[union-attr]
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as out:
        for ti, data in members:
            if ti.name == top:
                buf = io.BytesIO()
                with (
                    tarfile.open(fileobj=io.BytesIO(data)) as layer,
                    tarfile.open(fileobj=buf, mode="w") as new,
                ):
                    for m in layer:
                        new.addfile(m, layer.extractfile(m) if m.isreg() else None)
                    extra = tarfile.TarInfo("etc/evil")
                    extra.size = 5
                    new.addfile(extra, io.BytesIO(b"evil\n"))
                data = buf.getvalue()
                ti.size = len(data)
            out.addfile(ti, io.BytesIO(data) if ti.isreg() else None)
    p = netroot("export", str(evil), "--name", "s", "--root", str(tmp_path / "root"), home=tmp_path)
    assert p.returncode == 2, p.stderr
    assert repr(top) in p.stderr and "does not match the image config's diff id" in p.stderr
    assert (tmp_path / "root/s/versions").is_dir()  # the name was set up, nothing committed
    assert not (tmp_path / "root/s/current").exists()
    assert os.listdir(tmp_path / "root/s/versions") == []
    assert export_json(tmp_path, str(real), "--name", "s")["source"]["kind"] == "docker-save"
