"""Inventories as lab admins write them: netroot's value of every host's netroot_* and
connection variable is Ansible's own (`ansible-inventory --list`, and for a templated or
vaulted value what `ansible -m debug` renders, since netroot needs the real value)."""

from __future__ import annotations

from pathlib import Path

import pytest

import netroot.inventory
from netroot.inventory import Inventory, load
from netroot.sshtarget import target_for
from tests.unit.inventory.ansiblekit import (
    FIXTURES,
    PLAYBOOKS,
    AnsibleView,
    ansible_view,
    is_template_or_vault,
)

CONNECTION = ("ansible_host", "ansible_port", "ansible_user", "ansible_become_password")
VAULT_ENV = {"ANSIBLE_VAULT_PASSWORD_FILE": str(FIXTURES / "vault" / "vault-password.txt")}

CASES = {
    "directory": (FIXTURES / "directory" / "inventory", FIXTURES / "directory" / "playbook", {}),
    "ini": (FIXTURES / "ini" / "hosts.ini", PLAYBOOKS, {}),
    "vault": (FIXTURES / "vault" / "hosts.yml", PLAYBOOKS, VAULT_ENV),
    "templated": (FIXTURES / "templated" / "hosts.yml", PLAYBOOKS, {}),
    "duplicate": (FIXTURES / "duplicate", PLAYBOOKS, {}),
}


def _both(case: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Inventory, AnsibleView]:
    path, playbooks, env = CASES[case]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load(path, playbooks=playbooks), ansible_view(path, playbooks, env)


@pytest.mark.parametrize("case", list(CASES))
def test_every_variable_is_ansibles(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inv, ansible = _both(case, monkeypatch)
    assert list(inv.hosts) and set(inv.hosts) == set(ansible.listed)
    compared = 0
    for host, written in ansible.listed.items():
        ours = inv.hosts[host].vars
        names = {k for k in (*written, *ours) if k.startswith("netroot_") or k in CONNECTION}
        for name in sorted(names):
            assert name in written, f"{host}: netroot has {name}, Ansible does not"
            value = written[name]
            expected = ansible.rendered[host][name] if is_template_or_vault(value) else value
            assert ours.get(name) == expected, f"{host}: {name}"
            compared += 1
    for group, members in ansible.groups.items():
        assert inv.groups.get(group, frozenset()) == members, group
    assert compared >= len(inv.hosts) + len(inv.boards)


def test_directory_precedence_as_ansible_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture's comments say which value wins; Ansible agrees (above), and so does
    netroot's model of the boards."""
    inv, _ = _both("directory", monkeypatch)
    images = {b.name: b.image for b in inv.boards.values()}
    assert images == {"pi-01": "rack-a-img", "pi-02": "host-img", "pi-03": "inline",
                      "pi-04": "torchimg"}  # fmt: skip
    assert [b.name for b in inv.boards.values() if b.qpu] == ["pi-02", "pi-04"]
    # beside the playbook beats beside the inventory; a child group beats both
    assert {n: h.vars["netroot_gpu_mem"] for n, h in inv.hosts.items()} == {
        "srv-01": 128, "pi-01": 128, "pi-02": 128, "pi-03": 64, "pi-04": 64,
    }  # fmt: skip
    assert inv.server.backend == "ganesha" and inv.server.export_root == "/srv/lab"
    assert target_for(inv.hosts["pi-01"]).user == "netroot"


def test_templated_values_are_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    inv, _ = _both("templated", monkeypatch)
    assert {b.name: (b.address, b.image, b.qpu) for b in inv.boards.values()} == {
        "pi-01": ("10.50.0.11", "lab-torch", True),
        "pi-02": ("10.50.0.12", "lab-plain", False),
        "pi-03": ("10.50.0.13", "lab-plain", False),
    }
    assert target_for(inv.hosts["pi-03"]).port == 2222 and inv.server.export_root == "/srv/lab"
    assert inv.hosts["pi-01"].vars["netroot_gpu_mem"] == 128  # a number, as Ansible renders it


def test_vault_values_are_decrypted(monkeypatch: pytest.MonkeyPatch) -> None:
    inv, _ = _both("vault", monkeypatch)
    assert inv.boards["pi-02"].mac == "b8:27:eb:00:00:12"
    assert inv.boards["pi-01"].image == "secret-image"  # from the encrypted group_vars file
    assert inv.hosts["pi-01"].vars["ansible_become_password"] == "board-sudo-secret"
    assert inv.vault_password_files == (VAULT_ENV["ANSIBLE_VAULT_PASSWORD_FILE"],)


def test_written_twice_and_misspelt_are_warned_with_file_and_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(netroot.inventory, "_logged", set())
    inv, _ = _both("duplicate", monkeypatch)
    a, b = FIXTURES / "duplicate" / "a.yml", FIXTURES / "duplicate" / "b.yml"
    assert inv.boards["pi-01"].image == "second" and inv.boards["pi-02"].address == "10.60.0.22"
    assert f"{b}:7: host pi-01: netroot_image is also set at {a}:11 ('first'); Ansible uses "\
        "this one ('second')" in inv.warnings  # fmt: skip
    assert f"{b}:10: Found duplicate mapping key 'pi-02'." in inv.warnings
    assert f"{b}:12: netroot_imgae is not a netroot variable: ignored (did you mean "\
        "netroot_image?)" in inv.warnings  # fmt: skip
    assert len(inv.warnings) == 3
    logged = [r.getMessage() for r in caplog.records if r.name == "netroot.inventory"]
    assert logged == list(inv.warnings)
    load(CASES["duplicate"][0])  # again, as a smoke worker per board does: logged once
    assert [r.getMessage() for r in caplog.records if r.name == "netroot.inventory"] == logged


def test_a_clean_inventory_has_no_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    for case in ("directory", "ini", "templated"):
        path, playbooks, _ = CASES[case]
        assert load(path, playbooks=playbooks).warnings == (), case


def test_parse_means_what_the_same_file_means(tmp_path: Path) -> None:
    """parse() (in-memory data: tests, the lab's plans) goes through the same reader."""
    from netroot.inventory import parse

    data = {
        "all": {
            "children": {
                "nfs_servers": {"hosts": {"srv": {"ansible_host": "10.70.0.2"}}},
                "boards": {
                    "vars": {"netroot_address": "{{ ansible_host }}"},
                    "children": {
                        "a": {"hosts": {"pi-01": {"ansible_host": "10.70.0.11"}},
                              "vars": {"netroot_image": "from-a"}},
                        "b": {"hosts": {"pi-01": None}, "vars": {"netroot_image": "from-b"}},
                    },
                },
            }
        }
    }  # fmt: skip
    # Two sibling groups: Ansible sorts them by name, the later one wins.
    assert parse(data, tmp_path / "inv.yml").boards["pi-01"].image == "from-b"
    assert parse(data, tmp_path / "inv.yml").boards["pi-01"].address == "10.70.0.11"


def test_beside_the_playbook_is_where_netroot_runs_its_playbooks() -> None:
    """load() reads group_vars/ and host_vars/ beside the playbooks ansible-runner runs
    (adapters/ansible.py: project_dir), as ansible-playbook does."""
    from netroot.inventory import playbook_dir
    from netroot.paths import project_file

    assert playbook_dir() == project_file("playbooks") == PLAYBOOKS
    assert (PLAYBOOKS / "site.yml").is_file()
