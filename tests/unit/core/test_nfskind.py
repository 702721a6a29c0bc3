"""The NFS server kinds (netroot/nfskind.py) and the server role hold one list between them."""

from __future__ import annotations

import re

import pytest
import yaml

from netroot import nfskind
from netroot.inventory import BACKENDS
from netroot.paths import project_file
from netroot.remote import nfs_check

ROLE = project_file("playbooks") / "roles" / "netroot_nfs_server"


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


def test_each_kind_checks_only_its_exports_config_inside_the_marked_block() -> None:
    bad_exports = "/srv/netroot/raspbian 10.0.0.0/24(rw)\n"
    problems = nfskind.KERNEL.check_rendered("exports.j2", bad_exports)
    assert problems, "a writable, subnet-wide export is refused"
    # The block's first line is the marker: the rendered text starts on line 2.
    assert problems == nfs_check.check_exports(f"{nfs_check.BEGIN}\n{bad_exports}{nfs_check.END}\n")
    assert nfskind.KERNEL.check_rendered("_nfs_server_state.sh.j2", bad_exports) == []
    assert nfskind.GANESHA.check_rendered("exports.j2", bad_exports) == []
    unclosed = "EXPORT {\n  Export_Id = 1;\n"
    assert nfskind.GANESHA.check_rendered("ganesha.conf.j2", unclosed)


def test_of_names_each_kind_and_refuses_another() -> None:
    assert [nfskind.of(n).name for n in nfskind.NAMES] == list(nfskind.NAMES)
    with pytest.raises(KeyError):
        nfskind.of("nfsd")
