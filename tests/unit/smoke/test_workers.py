"""One pytest process smokes many hosts: one forked worker per host, each isolated.

Real pytest runs (a subprocess each) with netroot's plugin, against hosts whose commands run
on this machine (tests/unit/core/named_local.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]

CHECKS = """
import os

import pytest


def test_pid(host):
    name = host.backend.get_hostname()
    out = host.check_output("echo $PPID")
    with open(os.environ["PIDS"] + "/" + name, "w") as f:
        f.write(f"{os.getpid()} {out}")


@pytest.mark.parametrize("word", ["one", "two"])
def test_echo(host, word):
    assert host.check_output(f"echo {word}") == word


def test_only_a_passes(host):
    assert host.backend.get_hostname() == "a", "not a"


def test_skips_on_b(host):
    if host.backend.get_hostname() == "b":
        pytest.skip("skipped: b has none")


def test_c_worker_dies(host):
    if host.backend.get_hostname() == "c":
        os._exit(7)


def test_after_death(host):
    assert host.run("true").rc == 0
"""


def _run(
    tmp_path: Path, hosts: str, *extra: str, checks: str = CHECKS
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    (tmp_path / "test_checks.py").write_text(checks)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "netroot.smoke.plugin",
         "-p", "tests.unit.core.named_local", "-p", "no:cacheprovider",
         "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
         f"--hosts={hosts}", f"--netroot-results={results}", *extra,
         str(tmp_path / "test_checks.py")],
        capture_output=True, text=True, cwd=ROOT, env={"PIDS": str(pids), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    rows = json.loads(results.read_text()) if results.exists() else []
    return proc, rows


def _by_board(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["board"], {})[r["check"]] = r
    return out


def test_each_host_in_its_own_worker_isolated(tmp_path: Path) -> None:
    proc, rows = _run(
        tmp_path, "named://a,named://b,named://c", "--capture=sys", "--netroot-workers"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # some checks fail
    boards = _by_board(rows)
    assert set(boards) == {"a", "b", "c"}
    for name, checks in boards.items():
        assert checks["test_echo[one]"]["status"] == "pass", (name, checks)
        assert checks["test_echo[two]"]["status"] == "pass", (name, checks)
    # A failure, a skip or a dead worker on one host touches no other host's results.
    assert boards["a"]["test_only_a_passes"]["status"] == "pass"
    assert boards["b"]["test_only_a_passes"]["status"] == "fail"
    assert "not a" in boards["b"]["test_only_a_passes"]["message"]
    assert boards["b"]["test_skips_on_b"] == {**boards["b"]["test_skips_on_b"], "status": "skip",
                                              "message": "skipped: b has none"}  # fmt: skip
    assert boards["a"]["test_skips_on_b"]["status"] == "pass"
    for name in ("a", "b"):
        assert boards[name]["test_c_worker_dies"]["status"] == "pass"
        assert boards[name]["test_after_death"]["status"] == "pass"
    for check in ("test_c_worker_dies", "test_after_death"):
        died = boards["c"][check]
        assert died["status"] == "fail"
        assert "the smoke worker for c stopped before this check: exit 7" in died["message"]
    # One process collected; every host ran in a worker of its own, forked from it.
    pids = {p.name: p.read_text().split() for p in (tmp_path / "pids").iterdir()}
    assert len({pid for pid, _ in pids.values()}) == 3
    assert len({parent for _, parent in pids.values()}) == 3  # each shell's parent: its worker
    # The parent's terminal shows every host's checks, relayed.
    assert "failed" in proc.stdout and "passed" in proc.stdout


def test_same_results_as_a_plain_run(tmp_path: Path) -> None:
    checks = CHECKS.replace("os._exit(7)", "pass")
    _, plain = _run(tmp_path, "named://a,named://b", checks=checks)
    _, workers = _run(
        tmp_path, "named://a,named://b", "--capture=sys", "--netroot-workers", checks=checks
    )

    def key(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
        return sorted((r["board"], r["check"], r["status"], r["message"]) for r in rows)

    assert key(workers) == key(plain)
    assert len(plain) == 2 * 7


def test_host_less_check_runs_once(tmp_path: Path) -> None:
    checks = "def test_no_host():\n    pass\n\ndef test_with_host(host):\n    pass\n"
    proc, rows = _run(
        tmp_path, "named://a,named://b", "--capture=sys", "--netroot-workers", checks=checks
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted((r["board"], r["check"]) for r in rows) == [
        ("a", "test_with_host"), ("b", "test_with_host"), ("local", "test_no_host")
    ]  # fmt: skip


def test_fd_capture_is_refused(tmp_path: Path) -> None:
    proc, rows = _run(tmp_path, "named://a,named://b", "--netroot-workers")
    assert proc.returncode == 4 and not rows
    assert "one worker per host needs --capture=sys or -s" in proc.stderr
