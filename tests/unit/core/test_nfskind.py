"""The NFS server kinds (netroot/nfskind.py) and the server role hold one list between them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from netroot import nfskind
from netroot.inventory import BACKENDS, load
from netroot.paths import project_file
from netroot.provision.apply import preflight
from netroot.provision.plan import build
from netroot.remote import nfs_check
from netroot.templating import TemplateProblem

ROLE = project_file("playbooks") / "roles" / "netroot_nfs_server"
INVENTORY = Path(__file__).parents[1] / "fixtures" / "provision_inventory.yml"


def test_the_role_has_a_task_file_per_kind_and_checks_the_same_names() -> None:
    for name in nfskind.NAMES:
        assert (ROLE / "tasks" / f"{name}.yml").is_file(), name
    main = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    assertion = next(t for t in main if "ansible.builtin.assert" in t)
    that = assertion["ansible.builtin.assert"]["that"][0]
    assert re.findall(r"'(\w+)'", that) == list(nfskind.NAMES)
    assert BACKENDS == nfskind.NAMES  # the inventory refuses any other name


def test_the_role_and_the_inventory_default_to_the_same_kind() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert f"default('{nfskind.DEFAULT}')" in defaults["netroot_nfs_server_backend"]


def test_every_template_of_a_kind_exists_and_the_exports_come_first() -> None:
    templates = project_file("templates")
    for kind in nfskind.KINDS.values():
        assert kind.templates[0] == kind.exports_template
        assert kind.templates[-1] == nfskind.SERVER_STATE_TEMPLATE
        for name in kind.templates:
            assert (templates / name).is_file(), (kind.name, name)


def test_each_kind_is_checked_as_a_format_the_checker_has_and_the_role_validates() -> None:
    for kind in nfskind.KINDS.values():
        assert kind.check_format in nfs_check.CHECKS
        tasks = (ROLE / "tasks" / f"{kind.name}.yml").read_text()
        assert f"netroot-nfs-check {kind.check_format} %s" in tasks, kind.name
    bad = f"{nfs_check.BEGIN}\n/srv/netroot/raspbian 10.0.0.0/24(rw)\n{nfs_check.END}\n"
    assert nfs_check.CHECKS[nfskind.KERNEL.check_format](bad), "writable, subnet-wide: refused"


def test_of_names_each_kind_and_refuses_another() -> None:
    assert [nfskind.of(n).name for n in nfskind.NAMES] == list(nfskind.NAMES)
    with pytest.raises(KeyError):
        nfskind.of("nfsd")


@pytest.mark.parametrize("server", ["nfs-01", "nfs-kernel"])
def test_the_preflight_checks_each_servers_exports_as_its_kind_says(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inventory = load(INVENTORY)
    kind = inventory.servers[server].kind
    preflight(build(inventory, [server]), inventory)  # the fixture's exports pass
    refusal = [nfs_check.Problem(2, "planted refusal")]
    monkeypatch.setitem(nfs_check.CHECKS, kind.check_format, lambda _text: refusal)
    with pytest.raises(TemplateProblem) as info:
        preflight(build(inventory, [server]), inventory)
    assert (info.value.template, info.value.host) == (kind.exports_template, server)
    assert "rendered line 1 fails the exports check: planted refusal" in info.value.message
