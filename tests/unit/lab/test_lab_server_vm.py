"""The kernel server VM (`lab up --server kernel`) as data: plan, inventory, seed, qemu line."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import yaml

from netroot.errors import UsageError
from netroot.inventory import parse
from netroot.lab import recipes, render
from netroot.lab.host import seeds, servervm
from netroot.lab.plan import SERVER_ADDRESS, SERVER_USER, make_plan, stable_mac
from netroot.sshtarget import target_for


def test_the_server_kind_is_checked_and_diskless_boards_need_ganesha() -> None:
    assert make_plan(1, Path("/lab")).server == "ganesha"
    assert make_plan(1, Path("/lab"), server="kernel").server_user == SERVER_USER
    with pytest.raises(UsageError, match="--server nfsd: unknown"):
        make_plan(1, Path("/lab"), server="nfsd")
    with pytest.raises(UsageError, match="--netboot with --server kernel"):
        make_plan(1, Path("/lab"), netboot=1, server="kernel")


def test_kernel_inventory_reaches_the_server_as_a_sudo_user_with_a_remote_export_root() -> None:
    plan = make_plan(2, Path("/lab"), Path("/srv/export"), server="kernel")
    inv = parse(yaml.safe_load(render.inventory_yaml(plan)), Path("inventory.yml"))
    assert (inv.server.backend, inv.server.export_root) == ("kernel", "/srv/export")
    # The export root is the server's own disk: exports and the fleet state go there over SSH.
    assert inv.server.remote
    server = target_for(inv.server.host)
    assert (server.user, server.become, server.sudo) == (SERVER_USER, True, True)
    # The boards are untouched by the server's kind.
    assert target_for(inv.boards["pi-01"].host).user == "pi"


def test_ganesha_inventory_keeps_a_local_export_root() -> None:
    plan = make_plan(1, Path("/lab"), Path("/srv/export"))
    server = parse(yaml.safe_load(render.inventory_yaml(plan)), Path("i.yml")).server
    assert not server.remote and "netroot_export_remote" not in server.host.vars
    assert server.backend == "ganesha"


def test_server_vm_seed_holds_identity_address_and_export_root(tmp_path: Path) -> None:
    plan = make_plan(1, tmp_path, Path("/srv/export"), server="kernel")
    seed = seeds.server_vm_seed(plan, plan.nfs[0], "ssh-ed25519 AAAA lab")
    with tarfile.open(fileobj=io.BytesIO(seed)) as tar:
        members = {m.name: m for m in tar.getmembers()}

        def text(name: str) -> str:
            fh = tar.extractfile(members[name])
            assert fh is not None
            return fh.read().decode()

        assert text("etc/netroot/export-root") == "/srv/export\n"
        network = text("etc/systemd/network/10-netroot-lab.network")
        assert f"MACAddress={stable_mac(SERVER_ADDRESS)}" in network
        assert f"Address={SERVER_ADDRESS}/24" in network
        keys = members[f"home/{SERVER_USER}/.ssh/authorized_keys"]
        assert (keys.uid, keys.mode) == (1000, 0o600)
        assert text(f"home/{SERVER_USER}/.ssh/authorized_keys") == "ssh-ed25519 AAAA lab\n"
        assert members["etc/ssh/ssh_host_ed25519_key"].mode == 0o600
    # The same host key as known_hosts names for nfs-01, whatever the server's kind.
    assert (plan.server_dir / "ssh_host_ed25519_key").exists()


def test_qemu_line_is_tcg_x86_with_serial_tagged_disks_on_its_tap(tmp_path: Path) -> None:
    files = servervm.files_of(tmp_path)
    art = servervm.Artifacts(tmp_path / "k", tmp_path / "i", tmp_path / "b")
    argv = servervm.qemu_argv(files, art)
    line = " ".join(argv)
    assert argv[0] == "qemu-system-x86_64"
    assert "-accel tcg" in line and "kvm" not in line
    assert "-cpu qemu64" in line
    for serial in ("netroot-root", "netroot-seed", "netroot-export"):
        assert f"serial={serial}" in line
    assert f"file={files.seed},format=raw,readonly=on" in line
    assert "ifname=nrsrv0" in line and "systemd.hostname=nfs-01" in line
    assert f"mac={stable_mac(SERVER_ADDRESS)}" in line
    assert "root=/dev/vda" in servervm.kernel_cmdline()


def test_artifact_names_follow_the_tree_and_the_customize_script(tmp_path: Path) -> None:
    a = servervm.artifacts_for(tmp_path / "server-vm-rootfs-amd64-aaa.tar", tmp_path)
    b = servervm.artifacts_for(tmp_path / "server-vm-rootfs-amd64-bbb.tar", tmp_path)
    assert a.base != b.base
    assert a.kernel.parent == tmp_path and a.base.name.startswith("server-vm-")


def test_server_vm_recipe_has_what_the_issue_promises() -> None:
    wanted = {
        "linux-image-cloud-amd64",
        "systemd-sysv",
        "nfs-kernel-server",
        "openssh-server",
        "sudo",
        "python3",
        "rsync",
    }
    assert wanted <= set(recipes.SERVER_VM.packages)
    assert recipes.SERVER_VM.arch == "amd64"
    assert recipes.SERVER_VM in recipes.ALL


def test_the_export_disk_the_rsync_copy_wrote_goes_and_the_new_one_is_kept(tmp_path: Path) -> None:
    """Real qemu-img and mke2fs: the old export.img (copies of the control host's lock and
    fleet state in it) is removed, export-remote.img is made once and then kept."""
    base = tmp_path / "base.img"
    base.write_bytes(b"\0" * 1024 * 1024)
    art = servervm.Artifacts(tmp_path / "k", tmp_path / "i", base)
    files = servervm.files_of(tmp_path / "lab")
    files.dir.mkdir(parents=True)
    files.mirrored_disk.write_bytes(b"the stand-in's copy")
    servervm.prepare_disks(files, art, fresh=False)
    assert not files.mirrored_disk.exists() and files.export_disk.is_file()
    made = files.export_disk.stat().st_ino
    servervm.prepare_disks(files, art, fresh=False)
    assert files.export_disk.stat().st_ino == made
