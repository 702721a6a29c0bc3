"""config.txt as S3 reads it: the probe's parser and the lines that matter to the QPUs."""

from __future__ import annotations

from netroot.qpu import bootconfig
from netroot.qpu.bootconfig import BootConfig, qpu_lines

CONFIG = """# Enable DRM VC4 V3D driver
dtoverlay=vc4-kms-v3d
#dtoverlay=vc4-fkms-v3d
gpu_mem_1024=256
[pi4]
dtoverlay=vc4-fkms-v3d
gpu_mem=512
[pi3]
 gpu_mem = 128
[HDMI:0]
dtoverlay=vc4-fkms-v3d,cma-128
[all]
dtoverlay=disable-bt
"""


def test_parse_probe_splits_path_and_text() -> None:
    config = bootconfig.parse_probe(0, "/boot/firmware/config.txt\nline1\nline2\n")
    assert config == BootConfig("/boot/firmware/config.txt", "line1\nline2\n")
    assert bootconfig.parse_probe(1, "") is None
    assert bootconfig.parse_probe(0, "  \n") is None


def test_only_active_lines_that_apply_to_a_3b_are_kept() -> None:
    found = qpu_lines(BootConfig("/boot/config.txt", CONFIG))
    assert [(line.number, line.text, line.section) for line in found.overlays] == [
        (2, "dtoverlay=vc4-kms-v3d", "all"),
        (11, "dtoverlay=vc4-fkms-v3d,cma-128", "HDMI:0"),  # a filter that may apply
    ]
    assert [(line.number, line.text) for line in found.gpu_mem] == [
        (4, "gpu_mem_1024=256"),
        (9, "gpu_mem = 128"),
    ]


def test_describe_quotes_file_line_and_section() -> None:
    text = bootconfig.describe(BootConfig("/boot/config.txt", CONFIG))
    assert text == (
        "/boot/config.txt:2: dtoverlay=vc4-kms-v3d; "
        "/boot/config.txt:11: dtoverlay=vc4-fkms-v3d,cma-128 (in [HDMI:0]); "
        "/boot/config.txt:4: gpu_mem_1024=256; /boot/config.txt:9: gpu_mem = 128 (in [pi3])"
    )
    assert bootconfig.describe(BootConfig("/boot/config.txt", "arm_boost=1\n")) == (
        "/boot/config.txt: no vc4-kms-v3d/vc4-fkms-v3d overlay, no gpu_mem line (default)"
    )
    assert bootconfig.describe(None).startswith("no config.txt at /boot/firmware/config.txt")


def test_the_probe_prefers_bookworms_firmware_partition(tmp_path: object) -> None:
    # The probe is a fixed shell line: check its order rather than run it against /boot.
    first = bootconfig.PROBE.index("/boot/firmware/config.txt")
    assert first < bootconfig.PROBE.index("/boot/config.txt")
