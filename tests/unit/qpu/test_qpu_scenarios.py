"""Every scripted failure of the FAKE board: the exact stage, diagnosis and exit code."""

from __future__ import annotations

from typing import Any

import pytest

from netroot.qpu import fake, kernels, program
from netroot.qpu.bootconfig import BootConfig
from netroot.qpu.report import from_dict

KERNELS = {k.name: k.words for k in kernels.all_kernels().values()}

# scenario -> (stage that decides, its status under auto, exact diagnosis, exit code under auto)
EXPECTED = {
    "not_a_pi": ("S0", "skip", "no VideoCore IV on this board: no /dev/vcio, device tree model "
                 "'linux,dummy-virt'", 0),
    "no_vcio": ("S0", "fail", "/dev/vcio is missing in the chroot of this Raspberry Pi 3 Model B "
                "Rev 1.2: /dev is not bind-mounted into the chroot, or the kernel has no vcio "
                "driver", 3),
    "not_root": ("S0", "fail", "not root: the mailbox and /dev/mem need root", 3),
    "pi4": ("S1", "skip", "unsupported board: Raspberry Pi 4B, BCM2711, 4096 MB (revision "
            "0xc03111) has a VideoCore VI, not a VideoCore IV", 0),
    "qemu": ("S2", "skip", "no VideoCore IV on this board: firmware revision 346337 is QEMU's "
             "emulated Raspberry Pi firmware (an emulated board)", 0),
    "vc4_owns_v3d": ("S3", "fail", "the kernel's vc4 driver owns V3D (dtoverlay=vc4-kms-v3d or "
                     "vc4-fkms-v3d): the firmware refuses to enable or execute the QPUs", 3),
    "enable_refused": ("S5", "fail", "the firmware refused to enable the QPUs", 3),
    "devmem_eperm": ("S6", "fail", "/dev/mem refused the mapping: the kernel restricts /dev/mem "
                     "(CONFIG_STRICT_DEVMEM) or the process is not root / lacks CAP_SYS_RAWIO", 3),
    "gpu_mem_small": ("S7", "fail", "the firmware could not allocate GPU memory: gpu_mem is 16 "
                      "MiB (gpu_mem=16 disables 3D) or a cut-down firmware (start_cd.elf) runs",
                      3),
    "execute_timeout": ("S8", "fail", "the firmware's execute timed out after 100 ms (reply "
                        "0x80000000): the QPU program hung (scripted hang)", 3),
    "kernel_etimedout": ("S8", "fail", "the kernel's mailbox driver gave up waiting for the "
                         "firmware ([Errno 110] Connection timed out): the firmware is stuck", 3),
    "wrong_lanes": ("S8", "fail", "QPU 0: wrong lanes: the right values in the wrong lanes "
                    "(lane 0 holds the value of lane 15)", 3),
    "no_dma_store": ("S8", "fail", "QPU 0: no DMA store: all 16 output words still hold the "
                     "sentinel 0xdeadbeef", 3),
}  # fmt: skip


def run(scenario: str, mode: str) -> dict[str, Any]:
    return program.run(mode, fake.FakeBoard(scenario), KERNELS, madd_iterations=2)


def by_id(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {s["id"]: s for s in doc["stages"]}


def strip(text: str) -> str:
    return text.removeprefix(f"{program.EMULATED}: ")


# Scenarios that warn without blocking anything (tested on their own below).
WARN_ONLY = {"clock_idle"}


def test_every_scripted_failure_has_an_expectation() -> None:
    assert set(EXPECTED) | {"healthy"} | WARN_ONLY == set(fake.SCENARIOS)


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_scripted_failure_under_auto(scenario: str) -> None:
    sid, status, diagnosis, code = EXPECTED[scenario]
    doc = run(scenario, "auto")
    stages = by_id(doc)
    assert stages[sid]["status"] == status
    assert strip(stages[sid]["diagnosis"]) == diagnosis
    assert stages[sid]["remedy"]
    assert doc["summary"]["exit_code"] == code
    order = [s["id"] for s in doc["stages"]]
    assert order == [f"S{i}" for i in range(12)]
    # Everything before the deciding stage ran; everything after it was skipped.
    for later in order[order.index(sid) + 1 : -1]:
        assert stages[later]["status"] == "skip"
    assert stages["S11"]["status"] in ("pass", "skip")  # cleanup always ran, cleanly
    from_dict(doc)  # the lead's model accepts it


@pytest.mark.parametrize("scenario", ["not_a_pi", "pi4", "qemu"])
def test_no_videocore_fails_under_require(scenario: str) -> None:
    sid, _, diagnosis, _ = EXPECTED[scenario]
    doc = run(scenario, "require")
    stage = by_id(doc)[sid]
    assert stage["status"] == "fail"
    assert strip(stage["diagnosis"]) == (
        f"{diagnosis}, but --qpu require (or the inventory) expects a VideoCore IV"
    )
    assert doc["summary"]["exit_code"] == 3


def test_no_videocore_reason_in_summary_under_auto() -> None:
    doc = run("qemu", "auto")
    assert doc["summary"]["reason"].startswith("no VideoCore IV on this board")
    assert doc["summary"]["status"] == "pass"  # S0/S1 passed, the rest skipped


def test_cleanup_releases_what_was_acquired_after_a_failure() -> None:
    board = fake.FakeBoard("wrong_lanes")
    doc = program.run("auto", board, KERNELS, madd_iterations=2)
    assert strip(by_id(doc)["S11"]["evidence"]) == (
        "done: unmap, unlock, release, disable, close /dev/vcio"
    )
    assert board.allocations == {} and not board.enabled


def test_gpu_mem_warning_precedes_the_allocation_failure() -> None:
    stages = by_id(run("gpu_mem_small", "auto"))
    assert stages["S3"]["status"] == "warn"
    assert "gpu_mem is only 16 MiB" in stages["S3"]["diagnosis"]


def test_healthy_fake_board_passes_and_is_labelled_emulated() -> None:
    doc = run("healthy", "emulate")
    assert [s["status"] for s in doc["stages"]] == ["pass"] * 12
    assert doc["emulated"] is True and doc["note"] == program.EMULATED
    for stage in doc["stages"]:
        assert stage["evidence"].startswith(program.EMULATED)
    assert doc["summary"]["gflops"] is None  # never a GPU figure from the emulator
    assert doc["summary"]["emulator_gflops"] > 0
    assert doc["summary"]["exit_code"] == 0
    # A FAKE board is labelled emulated even when run under auto.
    assert run("healthy", "auto")["emulated"] is True


def test_skip_mode_touches_nothing() -> None:
    doc = program.run("skip", None, KERNELS)
    assert {s["status"] for s in doc["stages"]} == {"skip"}
    assert doc["summary"]["exit_code"] == 0


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode 'sometimes'"):
        program.run("sometimes", fake.FakeBoard(), KERNELS)


def test_identity_registers_of_an_unpowered_v3d() -> None:
    from netroot.qpu import smoke

    ctx = smoke.Context(fake.FakeBoard("healthy"), KERNELS, 2)
    stage = smoke.s6_identity(ctx)  # S5 never ran: V3D is off
    assert stage.status == "fail"
    assert stage.diagnosis == "IDENT0 reads 0xdeadbeef: the V3D block is not powered"


@pytest.mark.parametrize(
    ("revision", "text", "kind", "proc"),
    [
        (0xA02082, "Raspberry Pi 3B, BCM2837, 1024 MB (revision 0xa02082)", 0x08, 2),
        (0x80A22082, "Raspberry Pi 3B, BCM2837, 1024 MB (revision 0xa22082)", 0x08, 2),
        (0xA020D3, "Raspberry Pi 3B+, BCM2837, 1024 MB (revision 0xa020d3)", 0x0D, 2),
        (0xC03111, "Raspberry Pi 4B, BCM2711, 4096 MB (revision 0xc03111)", 0x11, 3),
        (0x000F, "old-style revision 0xf (BCM2835)", None, 0),
    ],
)
def test_board_revision_codes(revision: int, text: str, kind: int | None, proc: int) -> None:
    from netroot.qpu.revision import describe_revision

    assert describe_revision(revision) == (text, kind, proc)


class _ClockedBoard(fake.FakeBoard):
    """Exercises the hardware-only GFLOPS path: not labelled emulated, a scripted clock.

    Only for checking the arithmetic; the figures it yields are not measurements.
    """

    emulated = False

    def __init__(self, scenario: str = "healthy") -> None:
        super().__init__(scenario)
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 0.001  # every execute appears to take exactly 1 ms
        return self.now


def test_gflops_arithmetic_on_the_hardware_path() -> None:
    doc = program.run("require", _ClockedBoard(), KERNELS, madd_iterations=2)
    summary = doc["summary"]
    assert doc["emulated"] is False
    flops = 12 * 2 * 624  # QPUs x iterations x flops per iteration
    assert summary["gflops"] == pytest.approx(flops / 0.001 / 1e9)
    assert summary["percent_of_peak"] == round(100 * summary["gflops"] / 38.4, 1)
    assert summary["peak_gflops"] == 38.4 and summary["v3d_clock_hz"] == 400_000_000
    assert summary["launch_latency_ms"] == pytest.approx(1.0)
    s10 = by_id(doc)["S10"]
    assert s10["status"] == "warn"  # far below a quarter of the peak
    assert "% of the 38.4 GFLOPS peak at the 400 MHz V3D clock S4 read" in s10["evidence"]
    assert summary["exit_code"] == 0


class _Pi4WithoutVcio(fake.FakeBoard):
    """A Pi 4 whose kernel offers no /dev/vcio: unsupported, not a broken chroot."""

    def __init__(self) -> None:
        super().__init__("pi4")

    def exists(self, path: str) -> bool:
        return path != "/dev/vcio" and super().exists(path)


def test_newer_pi_without_vcio_is_unsupported_not_broken() -> None:
    doc = program.run("auto", _Pi4WithoutVcio(), KERNELS, madd_iterations=2)
    stage = by_id(doc)["S0"]
    assert stage["status"] == "skip"
    assert strip(stage["diagnosis"]) == (
        "unsupported board: Raspberry Pi 4 Model B Rev 1.1 has no VideoCore IV (and no "
        "/dev/vcio here)"
    )
    assert doc["summary"]["exit_code"] == 0


def test_an_idle_v3d_clock_warns_in_s4_and_sets_the_peak_of_s10() -> None:
    doc = program.run("require", _ClockedBoard("clock_idle"), KERNELS, madd_iterations=2)
    stages, summary = by_id(doc), doc["summary"]
    assert stages["S4"]["status"] == "warn"
    assert stages["S4"]["evidence"].startswith(
        "V3D clock 250 MHz (peak 24.0 GFLOPS at this clock); board maximum 400 MHz"
    )
    assert stages["S4"]["diagnosis"] == (
        "V3D runs at 250 MHz, below the board's maximum 400 MHz: the firmware scales it with "
        "load, so GFLOPS are scored against 24.0, not 38.4"
    )
    assert "force_turbo=1" in stages["S4"]["remedy"]
    # S10 scores against 12 QPUs x 4 lanes x 2 flops x 250 MHz = 24 GFLOPS.
    assert summary["peak_gflops"] == 24.0 and summary["v3d_clock_hz"] == 250_000_000
    assert summary["percent_of_peak"] == round(100 * summary["gflops"] / 24.0, 1)
    assert "% of the 24.0 GFLOPS peak at the 250 MHz V3D clock S4 read" in stages["S10"]["evidence"]
    # The fake's clock never moves, so S10 has nothing to add about a clock change.
    assert "after the loop" not in stages["S10"]["evidence"]
    assert summary["exit_code"] == 0  # warnings, not failures


def test_emulated_s10_names_the_peak_hardware_would_be_scored_against() -> None:
    s10 = by_id(run("clock_idle", "emulate"))["S10"]
    assert s10["status"] == "pass"
    assert "not a GPU measurement; hardware is scored against the 24.0 GFLOPS peak at the " \
        "250 MHz V3D clock S4 read" in s10["evidence"]  # fmt: skip


def test_peak_follows_the_clock() -> None:
    from netroot.qpu.smoke import peak_gflops

    assert peak_gflops(250_000_000) == 24.0
    assert peak_gflops(300_000_000) == pytest.approx(28.8)
    assert peak_gflops(400_000_000) == pytest.approx(38.4)


def test_s3_quotes_the_config_lines_and_names_the_provision_setting() -> None:
    s3 = by_id(run("vc4_owns_v3d", "auto"))["S3"]
    assert s3["status"] == "fail"
    assert strip(s3["evidence"]) == (
        "/proc/device-tree/soc/v3d@7ec00000/status = 'okay'; /sys/module/vc4 present; "
        "config.txt: /boot/firmware/config.txt:9: dtoverlay=vc4-kms-v3d"
    )
    assert "`netroot_qpu_boot_config: true`" in s3["remedy"]
    assert "netroot provision BOARD" in s3["remedy"]


def test_s3_quotes_gpu_mem_when_it_is_too_small() -> None:
    s3 = by_id(run("gpu_mem_small", "auto"))["S3"]
    assert s3["status"] == "warn"
    assert s3["evidence"].endswith("config.txt: /boot/firmware/config.txt:21: gpu_mem=16")
    assert "`netroot_qpu_boot_config: true`" in s3["remedy"]


class _ConfigBoard(fake.FakeBoard):
    """A healthy or vc4-owned board whose config.txt is given by the test."""

    def __init__(self, scenario: str, config: str | None) -> None:
        super().__init__(scenario)
        self.config = config

    def boot_config(self) -> BootConfig | None:
        return None if self.config is None else BootConfig("/boot/config.txt", self.config)


def test_s3_owned_v3d_without_the_overlay_in_config_means_a_reboot_is_due() -> None:
    board = _ConfigBoard("vc4_owns_v3d", "#dtoverlay=vc4-kms-v3d\ngpu_mem=128\n")
    s3 = by_id(program.run("auto", board, KERNELS, madd_iterations=2))["S3"]
    assert s3["status"] == "fail"
    assert strip(s3["evidence"]).endswith("config.txt: /boot/config.txt:2: gpu_mem=128")
    assert "has not been rebooted since config.txt changed" in s3["diagnosis"]
    assert strip(s3["remedy"]).startswith("reboot the board")


def test_s3_warns_when_config_would_hand_v3d_to_the_kernel_on_the_next_boot() -> None:
    board = _ConfigBoard("healthy", "[all]\ndtoverlay=vc4-fkms-v3d,cma-256\n")
    stages = by_id(program.run("auto", board, KERNELS, madd_iterations=2))
    assert stages["S3"]["status"] == "warn"
    assert "/boot/config.txt:2: dtoverlay=vc4-fkms-v3d,cma-256" in stages["S3"]["evidence"]
    assert "after the next reboot the kernel will own V3D" in stages["S3"]["diagnosis"]
    assert stages["S10"]["status"] == "pass"  # a warning blocks nothing


def test_s3_says_when_no_config_was_found() -> None:
    s3 = by_id(program.run("auto", _ConfigBoard("healthy", None), KERNELS, madd_iterations=2))["S3"]
    assert s3["status"] == "pass"
    assert strip(s3["evidence"]).endswith(
        "config.txt: no config.txt at /boot/firmware/config.txt or /boot/config.txt on the board"
    )
