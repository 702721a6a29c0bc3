"""Runner inputs as data, and bad input refused before any host is touched."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from netroot.errors import UsageError
from netroot.inventory import InventoryError, load
from netroot.provision.apply import provision
from netroot.provision.plan import RunPlan, build
from netroot.templating import TemplateProblem

INVENTORY = Path(__file__).parents[1] / "fixtures" / "provision_inventory.yml"
V = "0123456789ab"


def test_board_targets_run_site_with_the_server_in_the_limit() -> None:
    plan = build(load(INVENTORY), ["pi-02", "lab"])
    assert plan.playbook == "site.yml"
    assert plan.boards == ("pi-01", "pi-02", "pi-03")
    assert plan.limit == ("nfs-01", "pi-01", "pi-02", "pi-03")
    assert plan.cmdline == ""


def test_server_only_runs_the_server_playbook() -> None:
    plan = build(load(INVENTORY), ["nfs_servers"], check=True, diff=True)
    assert (plan.playbook, plan.boards, plan.cmdline) == ("nfs_server.yml", (), "--check --diff")


def test_the_vault_password_that_decrypted_the_inventory_reaches_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run points ANSIBLE_CONFIG at netroot's own ansible.cfg: a vault_password_file from
    the user's ansible.cfg would not reach ansible-playbook unless passed on its command line."""
    vault = Path(__file__).parents[1] / "fixtures" / "inventories" / "vault"
    secret = str(vault / "vault-password.txt")
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", secret)
    plan = build(load(vault / "hosts.yml"), ["nfs_servers"], check=True)
    assert shlex.split(plan.cmdline) == ["--check", "--vault-password-file", secret]


def test_all_hosts_has_no_limit_and_excludes_targets() -> None:
    with pytest.raises(UsageError):
        build(load(INVENTORY), [], all_hosts=False)
    with pytest.raises(UsageError):
        build(load(INVENTORY), ["pi-01"], all_hosts=True)


def test_per_board_versions_become_overrides() -> None:
    plan = build(load(INVENTORY), ["pi-01"], versions={"pi-01": V}, extra_vars={"x": 1})
    assert plan.extravars == {"x": 1, "netroot_version_overrides": {"pi-01": V}}
    assert plan.as_dict()["extravars"]["netroot_version_overrides"] == {"pi-01": V}
    pinned = next(b.name for b in load(INVENTORY).boards.values() if b.version)
    # A pinned board gets its pin decided here too: the role never reads netroot_version.
    plan = build(load(INVENTORY), [pinned])
    assert plan.extravars["netroot_version_overrides"] == {
        pinned: load(INVENTORY).boards[pinned].version
    }
    plan = build(load(INVENTORY), [pinned], versions={pinned: V})
    assert plan.extravars["netroot_version_overrides"] == {pinned: V}  # a decision wins
    with pytest.raises(UsageError, match="not a board of this run"):
        build(load(INVENTORY), ["pi-01"], versions={"pi-02": V})
    with pytest.raises(UsageError, match="not a version id"):
        build(load(INVENTORY), ["pi-01"], versions={"pi-01": "latest"})


def test_unknown_target_names_the_known_hosts() -> None:
    with pytest.raises(UsageError, match="no host or group named 'pi-99'"):
        build(load(INVENTORY), ["pi-99"])


def _bad_inventory(tmp_path: Path, **board_vars: Any) -> Path:
    data = yaml.safe_load(INVENTORY.read_text())
    data["all"]["children"]["boards"]["children"]["lab"]["hosts"]["pi-01"].update(board_vars)
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("board_vars", "field"),
    [
        ({"netroot_board_nfs_version": "5"}, "netroot_board_nfs_version"),
        ({"netroot_board_layer": "nfs"}, "netroot_board_layer"),
        ({"netroot_board_nfs_extra_options": "rw"}, "netroot_board_nfs_extra_options"),
        ({"netroot_board_nfs_version_profile": "nocto,rw"}, "netroot_board_nfs_version_profile"),
        ({"netroot_board_mount_retries": 0}, "netroot_board_mount_retries"),
    ],
)
def test_bad_inventory_value_fails_before_any_host_is_touched(
    tmp_path: Path, board_vars: dict[str, Any], field: str
) -> None:
    calls: list[RunPlan] = []

    def runner(plan: RunPlan, handle: Callable[[Mapping[str, Any]], None]) -> Any:
        calls.append(plan)
        raise AssertionError("Ansible must not run")

    inventory = load(_bad_inventory(tmp_path, **board_vars))
    with pytest.raises(InventoryError, match=f"host pi-01: {field}"):
        provision(inventory, ["pi-01"], runner=runner)
    assert calls == []


def test_export_problem_fails_before_any_host_is_touched(tmp_path: Path) -> None:
    # Two images forced onto one Export_Id: only the rendered ganesha.conf shows the clash.
    data = yaml.safe_load(INVENTORY.read_text())
    server = data["all"]["children"]["nfs_servers"]["hosts"]["nfs-01"]
    server["netroot_nfs_export_ids"] = {"raspbian": 5, "other": 5}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(TemplateProblem, match=r"ganesha\.conf\.j2 for host nfs-01.*Export_Id 5"):
        provision(load(path), ["pi-01"], runner=lambda plan, handle: pytest.fail("ran Ansible"))
