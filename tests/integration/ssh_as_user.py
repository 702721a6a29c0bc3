"""Run as another local user by tests/integration/test_ssh_jump_agent.py: netroot's status probe,
smoke backend, sudo preflight and provision against one inventory, each outcome printed as one
JSON object on stdout (the test asserts on it). Usage: python -m tests.integration.ssh_as_user
INVENTORY SERVER BOARD."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _attempt(what: str, outcome: dict[str, Any], step: Any) -> None:
    try:
        outcome[what] = step()
    except Exception as exc:  # the test prints it: which step failed, and SSH's own words
        outcome[what] = {"error": f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"}


def main(inventory_path: str, server: str, board: str) -> dict[str, Any]:
    from netroot.adapters.become import check_privileges
    from netroot.adapters.ssh import Session
    from netroot.fleet.probe import observe
    from netroot.inventory import load
    from netroot.provision.apply import provision
    from netroot.smoke.backend import NetrootBackend
    from netroot.sshtarget import target_for

    inventory = load(Path(inventory_path))
    outcome: dict[str, Any] = {}

    def session() -> dict[str, Any]:
        with Session(target_for(inventory.hosts[server])) as s:
            login = s.run("id -un").stdout.decode().strip()
            root = s.run_privileged("id -un").stdout.decode().strip()
            piped = s.run("cat", stdin=bytes(range(256)) * 64).stdout
            own_255 = s.run("echo out; echo err >&2; exit 255")
            return {
                "user": s.target.user,
                "login": login,
                "root": root,
                "piped_ok": piped == bytes(range(256)) * 64,
                "own_255": [own_255.rc, own_255.stdout.decode(), own_255.stderr.decode()],
            }

    def status() -> dict[str, Any]:
        facts, why = observe(inventory.resolve([board])[0])
        return {"facts": facts is not None, "why": why}

    def smoke() -> str:
        backend = NetrootBackend(board, ansible_inventory=inventory_path)
        try:
            return backend.run_on_board("id -un").stdout.decode().strip()
        finally:
            backend.close()

    def preflight() -> str:
        check_privileges([target_for(inventory.hosts[server])])
        return "ok"

    def provisioned() -> dict[str, Any]:
        result = provision(inventory, [server])
        return {"exit": int(result.exit_code), "result": result.as_dict()}

    for what, step in (
        ("session", session),
        ("status", status),
        ("smoke", smoke),
        ("preflight", preflight),
        ("provision", provisioned),
    ):
        _attempt(what, outcome, step)
    return outcome


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4]), default=str))
