"""Pure parts of the boards and the server container: qemu argv, saved-state fingerprint,
HMP output cleaning, capability handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from netroot.errors import UsageError
from netroot.lab import arch, render
from netroot.lab.host import boards, monitor, server
from netroot.lab.host.boards import BoardFiles
from netroot.lab.plan import board_plan, make_plan


def _argv(
    index: int = 1, kind: arch.BoardArch = arch.DEFAULT, gpu_mem: int = arch.LAB_GPU_MEM_MIB
) -> list[str]:
    files = BoardFiles(Path(f"/lab/boards/pi-{index:02d}"))
    machine = boards.Machine(Path("/k/vmlinuz"), Path("/k/initrd"), kind, gpu_mem)
    return boards.qemu_argv(board_plan(index), files, machine)


def _ram(argv: list[str]) -> str:
    return dict(zip(argv[1::2], argv[2::2], strict=False))["-m"]


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


def test_arm64_boards_have_a_3b_s_ram_less_their_gpu_mem_and_an_arm64_userspace() -> None:
    # 1024 MiB less the board's gpu_mem, as a 3B's OS sees it: 896 with the default 128.
    assert _ram(_argv(1, arch.ARM64)) == str(1024 - 128)
    assert _ram(_argv(1, arch.ARM64, gpu_mem=256)) == "768"
    assert _ram(_argv(1, arch.ARM64, gpu_mem=64)) == "960"
    assert arch.ARM64.userspace.arch == "arm64" and arch.ARMHF.userspace.arch == "armhf"
    assert arch.ARM64.userspace.packages == arch.ARMHF.userspace.packages
    assert _ram(_argv(1)) == "512" == _ram(_argv(1, gpu_mem=256))  # armhf: a fixed stand-in
    # A saved state of one RAM size is not resumed as another.
    assert boards.fingerprint(_argv(1, arch.ARM64), b"s") != boards.fingerprint(
        _argv(1, arch.ARM64, gpu_mem=256), b"s"
    )


def test_the_gpu_mem_the_ram_follows_is_the_one_provision_writes() -> None:
    plan = make_plan(2, Path("/lab"), arch="arm64", gpu_mem=256)
    hosts = render.inventory(plan)["all"]["children"]["boards"]["children"]["lab"]["hosts"]
    assert {h["netroot_gpu_mem"] for h in hosts.values()} == {256}
    assert make_plan(1, Path("/lab")).gpu_mem == arch.LAB_GPU_MEM_MIB == 128
    for bad in (16, 945):
        with pytest.raises(UsageError, match=f"--gpu-mem {bad}: expected 32..944") as err:
            make_plan(1, Path("/lab"), gpu_mem=bad)
        assert "disables the 3D block" in err.value.hint


def test_a_board_s_recorded_ram_is_read_back(tmp_path: Path) -> None:
    files = BoardFiles(tmp_path)
    assert boards.memory_of(files) is None  # started before RAM was recorded: boot anew
    (tmp_path / "memory").write_text("896\n")
    assert boards.memory_of(files) == 896


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


@pytest.mark.parametrize(
    "options",
    [
        {"gpu_mem": 16},
        {"boards_wanted": 40},
        {"netboot": 1, "arch": arch.ARM64},
        {"arm64": 2},  # more 64-bit boards than boards
        {"arm64": 1, "arch": arch.ARM64},  # every board is 64-bit already
    ],
)
def test_bad_options_are_refused_before_a_running_lab_is_touched(
    options: dict[str, object], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `up` on a running lab of another server kind takes it down first: a refusal must come
    # before that, and before anything else is looked at or changed.
    from netroot.lab.host import service

    touched: list[str] = []
    monkeypatch.setenv("NETROOT_HOME", str(tmp_path))
    for name in ("down", "status", "check_environment", "build_artifacts"):
        monkeypatch.setattr(service, name, lambda *_a, _n=name, **_k: touched.append(_n))
    kwargs: dict[str, object] = {"boards_wanted": 1, "server_kind": "kernel", **options}
    with pytest.raises(UsageError):
        service.up(report=print, **kwargs)  # type: ignore[arg-type]
    assert touched == []
