"""Pure parts of the boards and the server container: qemu argv, saved-state fingerprint,
HMP output cleaning, capability handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from netroot.errors import UsageError
from netroot.lab import arch, boards, monitor, server
from netroot.lab.boards import BoardFiles
from netroot.lab.plan import board_plan


def _argv(index: int = 1, kind: arch.BoardArch = arch.DEFAULT) -> list[str]:
    files = BoardFiles(Path(f"/lab/boards/pi-{index:02d}"))
    return boards.qemu_argv(board_plan(index), files, Path("/k/vmlinuz"), Path("/k/initrd"), kind)


def test_default_board_is_a_32_bit_cortex_a15_virt_board_that_can_reboot() -> None:
    argv = _argv(1)
    pairs = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert arch.DEFAULT.name == "armhf" and arch.DEFAULT.machine == "armv7l"
    assert argv[0] == "qemu-system-arm"
    assert pairs["-M"] == "virt" and pairs["-cpu"] == "cortex-a15"
    assert arch.DEFAULT.kernel.arch == "armhf"
    assert "linux-image-armmp-lpae" in arch.DEFAULT.kernel.packages
    # a guest reboot resets the machine in the same process: same tap, same disk
    assert "-no-reboot" not in argv


def test_arch_by_name_refuses_unknown_names() -> None:
    assert arch.by_name("arm64").machine == "aarch64"
    with pytest.raises(UsageError, match="riscv") as err:
        arch.by_name("riscv")
    assert "armhf, arm64" in err.value.hint


def test_arm64_board_is_a_cortex_a53_virt_board_on_its_own_tap() -> None:
    argv = _argv(2, arch.ARM64)
    pairs = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert argv[0] == "qemu-system-aarch64"
    assert pairs["-M"] == "virt" and pairs["-cpu"] == "cortex-a53"
    assert "ifname=nrtap2" in " ".join(argv)
    assert "mac=52:54:00:77:00:0c" in " ".join(argv)
    assert "netroot.ip=10.77.0.12/24" in pairs["-append"]
    assert "-daemonize" not in argv  # added at start, so the fingerprint ignores it
    assert any("seed.tar,format=raw,readonly=on" in a for a in argv)


def test_arm64_boards_have_a_3b_s_ram_and_an_arm64_userspace() -> None:
    # 1024 MiB less the gpu_mem netroot provisions by default (128): 896, as a 3B's OS sees it.
    assert dict(zip(_argv(1, arch.ARM64)[1::2], _argv(1, arch.ARM64)[2::2], strict=False))[
        "-m"
    ] == str(1024 - 128)
    assert arch.ARM64.userspace.arch == "arm64" and arch.ARMHF.userspace.arch == "armhf"
    assert arch.ARM64.userspace.packages == arch.ARMHF.userspace.packages
    assert dict(zip(_argv(1)[1::2], _argv(1)[2::2], strict=False))["-m"] == "512"


def test_saved_state_fingerprint_changes_with_machine_or_seed() -> None:
    a = boards.fingerprint(_argv(1), b"seed")
    assert a == boards.fingerprint(_argv(1), b"seed")
    assert a != boards.fingerprint(_argv(1), b"other seed")
    assert a != boards.fingerprint(_argv(2), b"seed")
    assert a != boards.fingerprint(_argv(1, arch.ARM64), b"seed")


def test_hmp_output_is_stripped_of_echo_escapes_and_prompt() -> None:
    raw = "savevm netroot-lab\r\n\x1b[K\x1b[Derror: no space\r\n(qemu) "
    assert monitor.clean(raw, "savevm netroot-lab") == "error: no space"
    assert monitor.clean("stop\r\n(qemu) ", "stop") == ""


def test_missing_caps_names_the_absent_bits() -> None:
    assert server.missing_caps("000001ffffffffff") == []
    assert server.missing_caps("000001fffeffffff") == ["SYS_RESOURCE"]
    assert server.missing_caps("000001fffefffffe") == ["CHOWN", "SYS_RESOURCE"]
