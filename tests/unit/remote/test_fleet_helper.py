"""The server's half of a remote fleet root (netroot.remote.fleet), run as it runs on the
server: `python3 -B -P -s -m netroot.remote.fleet ROOT CLIENT`, JSON lines on its stdin/stdout.
Two sessions stand for two control hosts; what travels over SSH is tested in
tests/integration/test_fleet_remote.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netroot.remote.fleet import STATE_NAME
from netroot.remote.lock import LOCK_NAME

REPO = Path(__file__).resolve().parents[3]


class Helper:
    def __init__(self, root: Path, client: str, *idle: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-B",
                "-P",
                "-s",
                "-m",
                "netroot.remote.fleet",
                str(root),
                client,
                *idle,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd="/",
            env={"PYTHONPATH": str(REPO), "PATH": os.environ["PATH"]},
        )
        self.hello = self.read()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        reply: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return reply

    def ask(self, payload: bytes = b"", **request: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        if payload:
            request["bytes"] = len(payload)
        self.proc.stdin.write(json.dumps(request).encode() + b"\n" + payload)
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "srv"


@pytest.fixture
def pair(root: Path) -> Iterator[tuple[Helper, Helper]]:
    root.mkdir()
    a, b = Helper(root, "ctl-a pid 11"), Helper(root, "ctl-b pid 22")
    yield a, b
    for h in (a, b):
        if h.proc.poll() is None:
            h.proc.kill()
            h.proc.wait()


def test_one_writer_named_to_the_other(pair: tuple[Helper, Helper]) -> None:
    a, b = pair
    assert a.hello["ok"] and a.hello["host"] == os.uname().nodename
    assert a.ask(op="lock", command="netroot rollout img", break_lock=False)["ok"]
    for op in ("lock", "refuse"):
        busy = b.ask(op=op, command="netroot provision", break_lock=False)
        assert not busy["ok"] and busy["busy"]
        assert busy["holder"]["command"] == "netroot rollout img (from ctl-a pid 11)"
        assert "ctl-a pid 11" in busy["error"] and "pid" in busy["error"]
    assert a.ask(op="unlock")["ok"]
    assert b.ask(op="lock", command="netroot provision", break_lock=False)["ok"]


def test_state_written_only_under_the_lock_atomically(
    pair: tuple[Helper, Helper], root: Path
) -> None:
    a, b = pair
    assert a.ask(op="read") == {"ok": True, "state": None}
    text = json.dumps({"boards": {"pi-01": {"assigned": "v1"}}, "rollout": None})
    refused = b.ask(text.encode(), op="save")
    assert not refused["ok"] and "without the writer's lock" in refused["error"]
    assert not (root / STATE_NAME).exists()
    a.ask(op="lock", command="netroot rollout", break_lock=False)
    assert a.ask(text.encode(), op="save")["ok"]
    assert b.ask(op="read")["state"] == text  # the other control host sees it
    assert (root / STATE_NAME).stat().st_mode & 0o777 == 0o600
    torn = a.ask(b'{"boards": ', op="save")
    assert not torn["ok"] and (root / STATE_NAME).read_text() == text
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_the_lock_dies_with_the_session(pair: tuple[Helper, Helper], root: Path) -> None:
    a, b = pair
    a.ask(op="lock", command="netroot rollout", break_lock=False)
    assert a.close() == 0  # EOF: the control host went away
    assert not (root / LOCK_NAME).exists()
    assert b.ask(op="lock", command="netroot rollout", break_lock=False)["ok"]


def test_a_killed_helper_leaves_a_lock_the_next_takes_over(
    pair: tuple[Helper, Helper], root: Path
) -> None:
    a, b = pair
    a.ask(op="lock", command="netroot rollout", break_lock=False)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait()
    assert (root / LOCK_NAME).exists()  # nothing could release it
    taken = b.ask(op="lock", command="netroot rollout", break_lock=False)
    assert taken["ok"] and taken["holder"]["pid"] == b.proc.pid


def test_switch_needs_the_lock_and_a_committed_version(
    pair: tuple[Helper, Helper], root: Path
) -> None:
    a, _ = pair
    versions = root / "img" / "versions"
    (versions / "v2").mkdir(parents=True)
    (versions / "v2.json").write_text("{}")
    assert "without the writer's lock" in a.ask(op="switch", name="img", version="v2")["error"]
    a.ask(op="lock", command="netroot rollout", break_lock=False)
    assert "no version v3" in a.ask(op="switch", name="img", version="v3")["error"]
    assert "bad name" in a.ask(op="switch", name="..", version="v2")["error"]
    assert a.ask(op="switch", name="img", version="v2") == {"ok": True, "switched": True}
    assert os.readlink(root / "img" / "current") == "versions/v2"
    assert a.ask(op="current", name="img")["current"] == "v2"
    assert a.ask(op="has", name="img", versions=["v2", "v3"])["has"] == {"v2": True, "v3": False}


def test_bad_requests_answer_in_one_line(pair: tuple[Helper, Helper]) -> None:
    a, _ = pair
    assert "unknown op" in a.ask(op="rm")["error"]
    assert "bad name" in a.ask(op="current", name="a/b")["error"]
    assert a.ask(op="read")["ok"]  # the session goes on


def test_a_silent_holder_loses_the_lock_a_pinging_one_keeps_it(root: Path) -> None:
    """A control host whose network vanished sends no EOF: silence ends its session."""
    root.mkdir()
    pinging, silent = Helper(root, "ctl-a pid 11", "1.5"), Helper(root, "ctl-b pid 22", "1.5")
    try:
        assert pinging.ask(op="lock", command="netroot rollout", break_lock=False)["ok"]
        for _ in range(8):  # 4 s, well past the idle time, pinging every 0.5 s
            time.sleep(0.5)
            assert pinging.ask(op="ping")["ok"]
        assert (root / LOCK_NAME).is_file()
        assert pinging.ask(op="unlock")["ok"]
        time.sleep(3)  # no lock held: silence is fine
        assert pinging.ask(op="read")["ok"]
        assert silent.ask(op="lock", command="netroot provision", break_lock=False)["ok"]
        assert silent.proc.wait(timeout=10) == 1  # silent past the idle time: it ends
        gone = silent.read()  # what the holder would read on its next request
        assert not gone["ok"] and "lock was released" in gone["error"]
        assert not (root / LOCK_NAME).exists()
        assert pinging.ask(op="lock", command="netroot rollout", break_lock=False)["ok"]
    finally:
        for h in (pinging, silent):
            if h.proc.poll() is None:
                h.proc.kill()
                h.proc.wait()


def test_events_logged_with_the_state_under_the_lock_and_read_by_anyone(
    pair: tuple[Helper, Helper], root: Path
) -> None:
    from netroot.remote.fleet import EVENTS_NAME

    a, b = pair
    line = json.dumps({"time": 1.0, "board": "pi-01", "event": "assigned", "version": "v1"})
    text = json.dumps({"boards": {"pi-01": {"assigned": "v1"}}, "rollout": None})
    refused = b.ask(op="events", events=[line])
    assert not refused["ok"] and "without the writer's lock" in refused["error"]
    a.ask(op="lock", command="netroot rollout", break_lock=False)
    assert a.ask(text.encode(), op="save", events=[line])["ok"]
    assert a.ask(op="events", events=[line.replace("v1", "v2")])["ok"]
    bad = a.ask(op="events", events="not a list")
    assert not bad["ok"] and "list of JSON lines" in bad["error"]
    answer = b.ask(op="read_events")
    logged = answer["events"].splitlines()
    assert [json.loads(x)["version"] for x in logged] == ["v1", "v2"]
    assert a.ask(op="events", events=[line.replace("v1", "v3")])["ok"]
    after = b.ask(op="read_events", after=answer["cursor"])  # a follower: only what is new
    assert [json.loads(x)["version"] for x in after["events"].splitlines()] == ["v3"]
    assert (root / EVENTS_NAME).stat().st_mode & 0o777 == 0o600
