"""The CLI with two NFS servers over tmp export roots: export goes to both, versions shows
which server holds what, a server that fails is named with its exit code after the other is
done, a rollout's dry run paces its batches per server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from tests.unit.core.fleetkit import current_link, netroot_cli, stamped_image


def _setup(tmp_path: Path, batch: int = 10) -> tuple[Path, dict[str, Path]]:
    roots = {"nfs-01": tmp_path / "root-1", "nfs-02": tmp_path / "root-2"}
    servers = {
        name: {"ansible_host": f"127.0.0.{2 + i}", "ansible_port": 1,
               "netroot_export_root": str(root), "netroot_server_reboot_batch": batch}
        for i, (name, root) in enumerate(roots.items())
    }  # fmt: skip
    boards = {
        f"pi-0{i}": {"ansible_host": f"127.0.0.{10 + i}", "ansible_port": 1,
                     "netroot_image": "img", "netroot_nfs_server": "nfs-01" if i < 4 else "nfs-02"}
        for i in range(1, 7)
    }  # fmt: skip
    inv = tmp_path / "ops" / "inventory.yml"
    inv.parent.mkdir()
    data = {"all": {"children": {"nfs_servers": {"hosts": servers}, "boards": {"hosts": boards}}}}
    inv.write_text(yaml.safe_dump(data, sort_keys=False))
    return inv, roots


def _netroot(inv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done: subprocess.CompletedProcess[str] = netroot_cli(inv, *args)
    return done


def test_export_and_versions_on_two_servers(tmp_path: Path) -> None:
    inv, roots = _setup(tmp_path)
    proc = _netroot(inv, "export", stamped_image(tmp_path, "a"), "--name", "img", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    version = out["version"]
    assert {s: r["ok"] and r["switched"] for s, r in out["servers"].items()} == {
        "nfs-01": True, "nfs-02": True}  # fmt: skip
    assert current_link(roots["nfs-01"], "img") == current_link(roots["nfs-02"], "img") == version
    listed = json.loads(_netroot(inv, "versions", "img", "--json").stdout)
    assert listed["servers"] == {s: {"current": version, "versions": [version]} for s in roots}
    assert [v["servers"] for v in listed["versions"]] == [["nfs-01", "nfs-02"]]
    table = _netroot(inv, "versions", "img").stdout
    assert "nfs-01* nfs-02*" in table
    assert _netroot(inv, "verify", "img").returncode == 0


def test_a_server_that_fails_is_named_after_the_other_is_done(tmp_path: Path) -> None:
    inv, roots = _setup(tmp_path)
    roots["nfs-02"].write_text("not a directory\n")  # nfs-02's root cannot be written
    proc = _netroot(inv, "export", stamped_image(tmp_path, "a"), "--name", "img", "--json")
    assert proc.returncode == 2, proc.stderr  # its own code: an unwritable export root
    out = json.loads(proc.stdout)
    assert out["servers"]["nfs-01"]["ok"] and not out["servers"]["nfs-02"]["ok"]
    assert current_link(roots["nfs-01"], "img") == out["version"]
    last = [line for line in proc.stderr.splitlines() if "nfs-02" in line]
    assert last and "export of img" in last[0] and "not writable" in last[0]


def test_a_rollout_plan_is_paced_per_server(tmp_path: Path) -> None:
    inv, _roots = _setup(tmp_path, batch=2)
    source = stamped_image(tmp_path, "b")
    proc = _netroot(inv, "rollout", source, "--name", "img", "--batch", "5", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    batches = [[s["board"] for s in b] for b in json.loads(proc.stdout)["plan"]["batches"]]
    # pi-01..03 on nfs-01, pi-04..06 on nfs-02, at most 2 of a server per batch.
    assert batches == [["pi-01"], ["pi-02", "pi-03", "pi-04", "pi-05"], ["pi-06"]]


def test_status_shows_which_board_hangs_off_which_server(tmp_path: Path) -> None:
    inv, _roots = _setup(tmp_path)
    proc = _netroot(inv, "status", "--json")
    assert proc.returncode == 4, proc.stderr  # the boards are not there: unreachable
    out = json.loads(proc.stdout)
    assert out["servers"]["nfs-01"] == {"address": "127.0.0.2", "home": True,
                                        "boards": ["pi-01", "pi-02", "pi-03"]}  # fmt: skip
    assert out["servers"]["nfs-02"]["boards"] == ["pi-04", "pi-05", "pi-06"]
    assert {b["board"]: b["server"] for b in out["boards"]}["pi-05"] == "nfs-02"
    table = _netroot(inv, "status")
    assert "┃ board ┃ server ┃" in table.stdout
    # Why each board could not be read, one line each under the table, on stderr.
    why = [line for line in table.stderr.splitlines() if "unreachable" in line]
    assert [line.split()[0] for line in why] == [f"pi-0{i}" for i in range(1, 7)], table.stderr
    # Port 1 is closed: ssh's own words, and what they mean (a missing known_hosts is said by the
    # sshd tests, tests/integration/test_host_keys.py: here no host ever answers).
    assert all("Connection refused" in line and "is sshd running?" in line for line in why), why
