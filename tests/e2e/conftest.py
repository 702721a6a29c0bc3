"""The virtual lab, once for the e2e tests, shared by every one of them.

`lab` reuses a lab that is already up and healthy (every host logs in with the lab's key and
a checked host key) and leaves it running; a lab it had to start from nothing it stops again
as soon as the last e2e test is done (package scope), so its idle boards do not slow the tests
that run after them.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from netroot import paths
from netroot.inventory import load
from netroot.remote.fleet import EVENTS_NAME, STATE_NAME
from netroot.sshtarget import SshTarget, target_for

LAB_BOARDS = 3


@dataclass(frozen=True)
class LabHandle:
    """What a test needs to reach the lab: inventory, keys, addresses, export root."""

    inventory: Path
    lab_dir: Path
    export_root: Path
    key: Path
    known_hosts: Path
    addresses: dict[str, str]  # host name -> address, server included
    started_here: bool
    targets: dict[str, SshTarget]  # host name -> how the inventory logs in (user, become)

    @property
    def boards(self) -> list[str]:
        return sorted(n for n in self.addresses if n.startswith("pi-"))

    def ssh(
        self,
        host: str,
        command: str,
        check: bool = True,
        timeout: float = 600,
        user: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `command` as root on a lab host over SSH (host key checked against the lab's).

        Logs in as the inventory's user (boards: `pi`, root is refused) and becomes root with
        `sudo -n` as the inventory says; `user` logs in as someone else, unprivileged.
        """
        from netroot.lab.host.ready import ssh_argv

        target = self.targets[host]
        line = command if user else target.privileged(command)
        argv = ssh_argv(
            self.addresses[host],
            self.key,
            self.known_hosts,
            line,
            user=user or target.user or "root",
        )
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{host}: {command!r}: rc {proc.returncode}\n{proc.stdout[-2000:]}\n"
                f"{proc.stderr[-2000:]}"
            )
        return proc


def _report(msg: str) -> None:
    print(f"[lab] {msg}", flush=True)


def current_lab(started_here: bool) -> LabHandle:
    """The lab as its inventory describes it now (written by the last `lab up`)."""
    inv = load(paths.lab_inventory())
    return LabHandle(
        inventory=paths.lab_inventory(),
        lab_dir=paths.lab_dir(),
        export_root=Path(inv.server.export_root),
        key=paths.lab_dir() / "id_ed25519",
        known_hosts=paths.lab_dir() / "known_hosts",
        addresses={name: target_for(h).host for name, h in inv.hosts.items()},
        started_here=started_here,
        targets={name: target_for(h) for name, h in inv.hosts.items()},
    )


@pytest.fixture(scope="package")
def lab() -> Iterator[LabHandle]:
    """The lab with (at least) 3 boards, SSH-ready."""
    from netroot.errors import EnvironmentMissing
    from netroot.lab import state
    from netroot.lab.host import service

    try:
        service.check_environment()
    except EnvironmentMissing as exc:
        pytest.skip(f"virtual lab cannot run here: {exc.message} ({exc.hint})")
    before = service.status()
    boards_up = sum(1 for h in before.hosts if h.role == "board" and h.running and h.ssh)
    # A lab with a 64-bit board (the demo's, `lab up`'s default) is made all 32-bit first: the
    # suite rolls the 32-bit image out to every board.
    mixed = bool(state.load(paths.lab_dir() / "state.json").get("arm64"))
    reuse = boards_up >= LAB_BOARDS and not mixed and service.healthy(before)
    t0 = time.monotonic()
    if not reuse:
        service.up(max(LAB_BOARDS, before.boards_planned), _report)
        _report(f"lab ready after {time.monotonic() - t0:.1f} s")
    handle = current_lab(started_here=not before.anything_running)
    # The suite starts from a fleet with no history: what an earlier use of this lab recorded
    # (the demo's 64-bit board on the torch image, versions pruned since) is not its starting
    # point. The boards' mounts stay; a rollout adopts what it observes on them.
    for name in (STATE_NAME, EVENTS_NAME, EVENTS_NAME + ".1"):
        (handle.export_root / name).unlink(missing_ok=True)
    yield handle
    if handle.started_here:
        service.down(_report)
