"""The server role through the real ansible-runner against a real sshd host (in a netns).

Ganesha: exports applied, served only to the listed board addresses, idempotent, hand-written
lines kept. Kernel backend: /etc/exports block (no nfsd needed: the file is validated by the
role's checker, not applied), lines outside kept byte for byte, a bad file never applied.
A board that is down is reported unreachable while the server completes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot.errors import Exit
from netroot.inventory import load
from netroot.provision.apply import ProvisionResult, provision
from netroot.templating import Renderer
from tests.integration.provision_hosts import (
    NEEDS_HOSTS,
    NetnsHost,
    make_export_tree,
    netns_host,
    write_inventory,
)

pytestmark = NEEDS_HOSTS

VERSION_A = "a1" * 6
VERSION_B = "b2" * 6
HAND_WRITTEN_GANESHA = "# hand-written: keep me\nMDCACHE {\n\tEntries_HWMark = 5000;  \n}\n"
HAND_WRITTEN_EXPORTS = (
    "# /etc/exports: the administrator's own lines\n"
    "/srv/data\t192.0.2.10(rw,sync,no_subtree_check)   \n"
    '"/srv/with space" 192.0.2.11(ro)\n'
    "\n"
)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsHost]:
    with netns_host(tmp_path_factory.mktemp("netns")) as h:
        yield h


def _inventory(host: NetnsHost, tmp: Path, server_vars: dict[str, Any]) -> Path:
    root = tmp / "export"
    make_export_tree(root, "img-a", VERSION_A)
    make_export_tree(root, "img-b", VERSION_B)
    prefix = host.address.rsplit(".", 1)[0]
    down = {"ansible_host": host.spare}
    data = {
        "all": {
            "vars": host.inventory_vars(),
            "children": {
                "nfs_servers": {
                    "hosts": {
                        "nfs-t": {
                            "ansible_host": host.address,
                            "netroot_export_root": str(root),
                            "netroot_nfs_address": host.address,
                            "netroot_nfs_server_bin_dir": str(tmp / "bin"),
                            "netroot_nfs_server_install_packages": False,
                            "netroot_nfs_server_state_file": str(tmp / "nfs-server.state"),
                            "netroot_nfs_server_nfsd_conf": str(tmp / "nfs.conf.d/netroot.conf"),
                            **server_vars,
                        }
                    }
                },
                "boards": {
                    "hosts": {
                        # pi-a is the test process itself (the veth's host end): it may mount.
                        "pi-a": {
                            **down,
                            "netroot_address": host.host_address,
                            "netroot_image": "img-a",
                        },
                        "pi-b": {
                            **down,
                            "netroot_address": f"{prefix}.3",
                            "netroot_image": "img-b",
                        },
                    }
                },
            },
        }
    }
    (tmp / "bin").mkdir(exist_ok=True)
    return write_inventory(tmp / "inventory.yml", data)


def _run(inventory: Path, targets: list[str], **kw: Any) -> ProvisionResult:
    events: list[dict[str, Any]] = []
    result = provision(
        load(inventory), targets, on_event=lambda e, _s: events.append(dict(e)), **kw
    )
    record = os.environ.get("NETROOT_RECORD_EVENTS")  # how the unit tests' fixtures were made
    if record:
        name = "-".join(targets) or "all"
        Path(record, f"{inventory.parent.name}-{name}.json").write_text(json.dumps(events))
    return result


def _ganesha_inventory(host: NetnsHost, tmp: Path) -> tuple[Path, Path]:
    """The ganesha backend run by its control script, over a hand-written config."""
    conf = tmp / "ganesha.conf"
    conf.write_text(HAND_WRITTEN_GANESHA)
    inventory = _inventory(
        host,
        tmp,
        {
            "netroot_nfs_backend": "ganesha",
            "netroot_nfs_server_ganesha_conf": str(conf),
            "netroot_nfs_server_ganesha_pidfile": str(host.workdir / "ganesha.pid"),
            "netroot_nfs_server_ganesha_log": str(tmp / "ganesha.log"),
            "netroot_nfs_server_ganesha_service": "script",
        },
    )
    return conf, inventory


def _nfs_ls(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nfs-ls", url], capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("ganesha.nfsd") is None, reason="nfs-ganesha not installed")
def test_ganesha_exports_only_to_listed_boards_and_is_idempotent(
    host: NetnsHost, tmp_path: Path
) -> None:
    conf, inventory = _ganesha_inventory(host, tmp_path)
    first = _run(inventory, ["nfs-t"])
    assert first.exit_code == Exit.OK, first.as_dict()
    assert first.summary.hosts["nfs-t"].changed > 0
    text = conf.read_text()
    assert text.startswith(HAND_WRITTEN_GANESHA)
    rendered = Renderer(load(inventory)).render_server("nfs-t")[0].text
    assert rendered.strip() in text  # Python's dry run renders what Ansible wrote

    status = host.exec(str(tmp_path / "bin" / "netroot-ganesha"), "status", check=False)
    assert status.stdout.startswith("running"), status

    root = tmp_path / "export"
    allowed = _nfs_ls(f"nfs://{host.address}{root}/img-a/versions/")
    assert allowed.returncode == 0, allowed.stderr
    assert VERSION_A in allowed.stdout
    refused = _nfs_ls(f"nfs://{host.address}{root}/img-b/versions/")
    assert refused.returncode != 0  # img-b is exported to pi-b's address only
    assert VERSION_B not in refused.stdout

    second = _run(inventory, ["nfs-t"])
    assert second.exit_code == Exit.OK
    assert second.summary.hosts["nfs-t"].changed == 0, second.as_dict()


def _configured(result: ProvisionResult, events: list[dict[str, Any]]) -> bool:
    """Whether the run configured the server (tasks/configure.yml ran) rather than skipping it."""
    assert result.exit_code == Exit.OK, result.as_dict()
    include = [
        str(e["event"])
        for e in events
        if (e.get("event_data") or {}).get("task", "").startswith("Configure the server")
        and e["event"] in ("runner_on_ok", "runner_on_skipped")
    ]
    assert len(include) == 1, include
    return include[0] == "runner_on_ok"


@pytest.mark.skipif(shutil.which("ganesha.nfsd") is None, reason="nfs-ganesha not installed")
def test_an_unchanged_server_is_not_configured_again(host: NetnsHost, tmp_path: Path) -> None:
    """The stamp skips configuring only a server whose inputs, files and services are as the
    last successful run left them; anything else configures it again."""
    conf, inventory = _ganesha_inventory(host, tmp_path)
    stamp = tmp_path / "nfs-server.state"
    control = tmp_path / "bin" / "netroot-ganesha"

    def run(**kw: Any) -> tuple[ProvisionResult, bool]:
        events: list[dict[str, Any]] = []
        result = provision(
            load(inventory), ["nfs-t"], on_event=lambda e, _s: events.append(dict(e)), **kw
        )
        return result, _configured(result, events)

    assert run()[1]  # no stamp yet
    configured = conf.read_text()
    recorded = stamp.read_text()
    result, again = run()
    assert not again and result.summary.hosts["nfs-t"].changed == 0
    assert stamp.read_text() == recorded

    # The managed block deleted by hand: configured again, the block is back.
    conf.write_text(HAND_WRITTEN_GANESHA)
    assert run()[1]
    assert conf.read_text() == configured

    # Ganesha stopped: started again.
    host.exec(str(control), "stop")
    assert run()[1]
    assert host.exec(str(control), "status", check=False).stdout.startswith("running")

    # A board's address changes the exports: a changed inventory is never skipped. In check
    # mode nothing is written, the stamp included.
    data = yaml.safe_load(inventory.read_text())
    moved = host.address.rsplit(".", 1)[0] + ".5"
    data["all"]["children"]["boards"]["hosts"]["pi-b"]["netroot_address"] = moved
    write_inventory(inventory, data)
    recorded = stamp.read_text()
    checked, would = run(check=True)
    assert would and checked.summary.hosts["nfs-t"].changed > 0
    assert conf.read_text() == configured and stamp.read_text() == recorded
    assert run()[1]
    assert moved in conf.read_text() and stamp.read_text() != recorded
    assert not run()[1]

    # An image without versions fails the run before anything is decided.
    shutil.rmtree(tmp_path / "export" / "img-b" / "versions" / VERSION_B)
    missing = provision(load(inventory), ["nfs-t"])
    assert missing.exit_code == Exit.FAILED
    assert [f.task for f in missing.summary.failures] == ["Check the exports can be served"]


def test_kernel_exports_keep_hand_written_lines_byte_for_byte(
    host: NetnsHost, tmp_path: Path
) -> None:
    exports = tmp_path / "exports"
    exports.write_bytes(HAND_WRITTEN_EXPORTS.encode())
    inventory = _inventory(
        host,
        tmp_path,
        {
            "netroot_nfs_backend": "kernel",
            "netroot_nfs_server_exports_file": str(exports),
            # no nfsd on this kernel: validate, not apply
            "netroot_nfs_server_manage_service": False,
        },
    )
    result = _run(inventory, ["nfs-t"])
    assert result.exit_code == Exit.OK, result.as_dict()
    # Two boards: the floor of 16 nfsd threads.
    nfsd_conf = (tmp_path / "nfs.conf.d" / "netroot.conf").read_text().splitlines()
    assert nfsd_conf[1:] == ["[nfsd]", "threads = 16"]
    data = exports.read_bytes()
    assert data.startswith(HAND_WRITTEN_EXPORTS.encode())
    block = data[len(HAND_WRITTEN_EXPORTS) :].decode()
    rendered = Renderer(load(inventory)).render_server("nfs-t")[0].text
    assert (
        block == f"# BEGIN netroot managed block\n{rendered.strip()}\n# END netroot managed block\n"
    )
    assert f"{tmp_path}/export/img-a {host.host_address}(ro," in block
    assert "*" not in block

    again = _run(inventory, ["nfs-t"])
    assert again.summary.hosts["nfs-t"].changed == 0, again.as_dict()

    # A new board changes the block while the administrator's part has a syntax error: the
    # checker refuses the whole candidate, nothing is applied, the old file keeps serving.
    broken = data.replace(b"/srv/data", b"srv/data")
    exports.write_bytes(broken)
    inv_data = yaml.safe_load(inventory.read_text())
    boards = inv_data["all"]["children"]["boards"]["hosts"]
    boards["pi-c"] = {**boards["pi-a"], "netroot_address": host.address.rsplit(".", 1)[0] + ".4"}
    write_inventory(inventory, inv_data)
    failed = _run(inventory, ["nfs-t"])
    assert failed.exit_code == Exit.FAILED
    assert exports.read_bytes() == broken
    messages = " ".join(f.message for f in failed.summary.failures)
    assert "not absolute" in messages, failed.as_dict()


def test_board_down_is_unreachable_while_the_server_completes(
    host: NetnsHost, tmp_path: Path
) -> None:
    exports = tmp_path / "exports"
    inventory = _inventory(
        host,
        tmp_path,
        {
            "netroot_nfs_backend": "kernel",
            "netroot_nfs_server_exports_file": str(exports),
            "netroot_nfs_server_manage_service": False,
        },
    )
    result = _run(inventory, [], all_hosts=True)
    assert result.summary.hosts["nfs-t"].state in ("ok", "changed")
    assert result.summary.hosts["nfs-t"].failed == 0
    for board in ("pi-a", "pi-b"):
        assert result.summary.hosts[board].state == "unreachable", result.as_dict()
    assert {f.host for f in result.summary.failures if f.unreachable} == {"pi-a", "pi-b"}
    assert result.exit_code == Exit.UNREACHABLE
    assert exports.exists()


def test_every_image_without_a_version_is_named_with_the_fix(
    host: NetnsHost, tmp_path: Path
) -> None:
    """The looped check fails per image: each failed item's own message reaches the summary
    (Ansible's task-level msg says only "One or more items failed")."""
    inventory = _inventory(
        host,
        tmp_path,
        {
            "netroot_nfs_backend": "kernel",
            "netroot_nfs_server_exports_file": str(tmp_path / "exports"),
            "netroot_nfs_server_manage_service": False,
        },
    )
    data = yaml.safe_load(inventory.read_text())
    boards = data["all"]["children"]["boards"]["hosts"]
    boards["pi-b"]["netroot_image"] = "img-none"  # img-a keeps its version: that item passes
    prefix = host.address.rsplit(".", 1)[0]
    boards["pi-c"] = {
        **boards["pi-b"],
        "netroot_address": f"{prefix}.4",
        "netroot_image": "img-gone",
    }
    write_inventory(inventory, data)
    result = _run(inventory, ["nfs-t"])
    assert result.exit_code == Exit.FAILED
    [failure] = result.summary.failures
    assert failure.task == "Check the exports can be served"
    assert "One or more items failed" not in failure.message
    for image in ("img-none", "img-gone"):
        assert f"no version of image {image} exported yet" in failure.message, failure
        assert f"netroot export SOURCE --name {image}" in failure.message, failure
    assert "img-a " not in failure.message
    assert not (tmp_path / "exports").exists()  # nothing configured
