"""The boot mode is one object per board, chosen once from the inventory."""

from __future__ import annotations

import pytest

from netroot import bootmode
from netroot.bootmode import NetBoot, SdBoot
from netroot.bootmode.sd import CHROOT

V = "ab" * 8


def test_every_inventory_value_names_one_mode() -> None:
    assert bootmode.NAMES == ("sd", "netboot")
    assert isinstance(bootmode.of("sd"), SdBoot) and isinstance(bootmode.of("netboot"), NetBoot)
    assert bootmode.of(bootmode.DEFAULT) is bootmode.of("sd")
    with pytest.raises(KeyError):
        bootmode.of("usb")


def test_how_a_command_reaches_the_version() -> None:
    sd, nb = bootmode.of("sd"), bootmode.of("netboot")
    assert sd.in_version("cat /etc/hostname") == f"{CHROOT} /bin/sh -c 'cat /etc/hostname'"
    assert sd.exec_in_version("/usr/bin/python3 -") == f"{CHROOT} /usr/bin/python3 -"
    assert nb.in_version("cat /etc/hostname") == "cat /etc/hostname"
    assert nb.exec_in_version("/usr/bin/python3 -") == "/usr/bin/python3 -"
    assert sd.version_root_missing("pi-01").endswith("run `netroot provision pi-01`")
    assert nb.version_root_missing("pi-01") == ""


def test_what_the_status_probe_means() -> None:
    sd, nb = bootmode.of("sd"), bootmode.of("netboot")
    cmdline = f"console=tty1 nfsroot=10.0.0.1:/srv/netroot/raspbian/versions/{V},vers=3"
    assert sd.read_probe(f"{V}\n", "\n", cmdline) == (V, None)
    assert nb.read_probe(f"{V}\n", f"{V}\n", cmdline) == (None, V)
    assert sd.drift(V, V, None) == "nothing mounted"
    assert nb.drift(V, None, None).startswith("booted no netroot version")
    assert sd.drift(V, V, V) == nb.drift(V, None, V) == ""


def test_what_each_mode_asks_of_the_inventory_and_the_server() -> None:
    sd, nb = bootmode.of("sd"), bootmode.of("netboot")
    assert sd.required_vars == () and nb.required_vars == ("netroot_mac", "netroot_serial")
    assert not sd.served_over_tftp and nb.served_over_tftp
    assert nb.board_templates == ("cmdline.txt.j2",) and "netroot-mount.j2" in sd.board_templates
