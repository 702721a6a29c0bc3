"""The rollout, rollback and provision commands' wiring: plans that write nothing, the lock.

The boards are on loopback addresses where nothing listens (every SSH attempt is refused at
once), so nothing here needs a lab; the source is a rootfs tar.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import yaml
from rich.console import Console

from netroot.remote import lock
from tests.unit.core.fleetkit import netroot_cli, snapshot
from tests.unit.export.tarbuild import Spec, write_tar


def _setup(tmp_path: Path) -> tuple[Path, Path, str]:
    root = tmp_path / "root"
    inv = tmp_path / "ops" / "inventory.yml"
    inv.parent.mkdir()
    server = {"ansible_host": "127.0.0.2", "ansible_port": 1, "netroot_export_root": str(root)}
    boards = {f"pi-0{i}": {"ansible_host": f"127.0.0.{2 + i}", "ansible_port": 1} for i in (1, 2)}
    data = {"all": {"children": {"nfs_servers": {"hosts": {"nfs-01": server}},
                                 "boards": {"hosts": boards}}}}  # fmt: skip
    inv.write_text(yaml.safe_dump(data))
    source = write_tar(tmp_path / "img.tar", [Spec("etc", "d", mode=0o755), Spec("etc/x")])
    root.mkdir()
    return inv, root, str(source)


def _netroot(inv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done: subprocess.CompletedProcess[str] = netroot_cli(inv, *args)
    return done


def test_dry_run_and_declined_prompt_write_nothing(tmp_path: Path) -> None:
    inv, _root, source = _setup(tmp_path)
    before = snapshot(tmp_path)
    proc = _netroot(inv, "rollout", source, "--name", "raspbian", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)["plan"]
    assert [s["board"] for b in plan["batches"] for s in b] == ["pi-01", "pi-02"]
    # Without --yes on a non-interactive stdin: refused before anything is written.
    proc = _netroot(inv, "rollout", source, "--name", "raspbian")
    assert proc.returncode == 2 and "--yes" in proc.stderr
    assert snapshot(tmp_path) == before


def test_writers_refused_while_the_lock_is_held(tmp_path: Path) -> None:
    inv, root, source = _setup(tmp_path)
    holder = lock.acquire(root, "netroot rollout other:1")
    try:
        for args in (
            ("rollout", source, "--name", "raspbian", "--yes"),
            ("rollback", "pi-01", "--to", "a" * 16, "--yes"),
            ("provision", "boards"),
        ):
            proc = _netroot(inv, *args)
            assert proc.returncode == 6, (args, proc.stderr)
            assert f"pid {holder.pid}" in proc.stderr and "netroot rollout other:1" in proc.stderr
        assert not (root / "raspbian").exists()  # refused before the export
        # Readers never wait for, nor touch, the lock.
        assert _netroot(inv, "status", "--json").returncode == 4  # unreachable boards (data)
        assert _netroot(inv, "rollout", source, "--name", "raspbian", "--dry-run").returncode == 0
    finally:
        lock.release(root, holder)


def test_a_rollout_shows_its_canarys_findings_once() -> None:
    """After the results: the first smoked board's notes (stderr) and tables (stdout), a torch
    board's S12 line and operators table among them; no other board's are repeated."""
    from netroot.cli.context import AppContext
    from netroot.cli.rollout_cmd import _first_smoke_findings
    from netroot.console import Output
    from netroot.smoke.results import BoardReport, SmokeReport
    from netroot.smoke.stage import Table

    def board(name: str) -> BoardReport:
        table = Table(f"{name}: operators vs torch's CPU, EMULATED", ["op", "verdict"],
                      [["add", "within"]])  # fmt: skip
        return BoardReport(name, notes=[f"import torch: 21.3 s ({name})"], tables=[table])

    out, err = io.StringIO(), io.StringIO()
    app = AppContext(out=Output(err=Console(file=err, width=200), out=Console(file=out, width=200)))
    # A canary of two boards, then a batch: the canary's first board only.
    first, later = SmokeReport([board("pi-03"), board("pi-05")]), SmokeReport([board("pi-04")])
    _first_smoke_findings(app, [first, later])
    assert err.getvalue().splitlines() == ["pi-03: import torch: 21.3 s (pi-03)"]
    shown = " ".join(out.getvalue().split())  # the title wraps to the table's width
    assert "pi-03: operators vs torch's CPU, EMULATED" in shown and "│ add │ within │" in shown
    assert "pi-04" not in shown + err.getvalue() and "pi-05" not in shown + err.getvalue()
    # No smoke ran (a rollout with nothing to switch): nothing shown.
    out, err = io.StringIO(), io.StringIO()
    app = AppContext(out=Output(err=Console(file=err, width=200), out=Console(file=out, width=200)))
    _first_smoke_findings(app, [])
    assert out.getvalue() == err.getvalue() == ""
