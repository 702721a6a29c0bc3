"""Choices and ranges are refused as the command line is read: exit 2, one line naming the
option, before the inventory is even opened (so before any board is probed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netroot.cli.context import QpuMode
from netroot.cli.lab_cmd import Arch, ServerKind
from netroot.lab.arch import ARCHES
from netroot.lab.plan import SERVER_KINDS
from netroot.qpu.modes import MODES
from tests.unit.cli.clikit import error_lines, netroot

REFUSED = [
    (("rollout", "img:1", "--qpu", "bogus"), "--qpu"),
    (("rollout", "img:1", "--canary", "-1"), "--canary"),
    (("rollout", "img:1", "--stagger", "-5"), "--stagger"),
    (("rollout", "img:1", "--batch", "5x"), "--batch"),
    (("rollout", "img:1", "--max-fail", "101%"), "--max-fail"),
    (("rollout", "img:1", "--name", "Bad/Name"), "--name"),
    (("rollback", "pi-01", "--to", "HEAD~1"), "--to"),
    (("export", "img:1", "--name", "../up"), "--name"),
    (("smoke", "boards", "--qpu", "gpu"), "--qpu"),
    (("export", "img:1", "--keep", "0"), "--keep"),
    (("prune", "img", "--keep", "0"), "--keep"),
    (("lab", "up", "--arch", "x86"), "--arch"),
    (("lab", "up", "--server", "nfsd"), "--server"),
    (("lab", "up", "--gpu-mem", "16"), "--gpu-mem"),
    (("lab", "up", "--boards", "101"), "--boards"),
    (("lab", "up", "--board-kind", "tiny"), "--board-kind"),
    (("lab", "build", "--arch", "riscv"), "--arch"),
]


@pytest.mark.parametrize("args,option", REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_before_any_work(args: tuple[str, ...], option: str, tmp_path: Path) -> None:
    # An inventory that does not exist: read before the options, it would be the error.
    done = netroot(*args, "-i", str(tmp_path / "absent.yml"), home=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 2 and option in lines[0] and "absent.yml" not in done.stderr, lines
    assert lines[1].startswith("hint:") and "--help" in lines[1]
    assert "Traceback" not in done.stderr and not done.stdout


def test_the_choices_are_the_rooms_own_lists() -> None:
    assert tuple(m.value for m in QpuMode) == MODES
    assert tuple(a.value for a in Arch) == tuple(ARCHES)
    assert tuple(k.value for k in ServerKind) == SERVER_KINDS
