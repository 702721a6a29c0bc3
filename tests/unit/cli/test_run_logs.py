"""Ansible's run logs are kept per inventory: a throwaway inventory's runs never evict the lab's
(the last KEEP_RUNS of each stay). A real ansible-runner run of a one-task local playbook."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from netroot.adapters import ansible


@dataclass(frozen=True)
class _Plan:
    inventory: Path
    playbook: str = "site.yml"
    limit: tuple[str, ...] = ()
    extravars: dict[str, Any] = field(default_factory=dict)
    cmdline: str = ""


def _playbooks(tmp_path: Path) -> Path:
    where = tmp_path / "playbooks"
    where.mkdir()
    (where / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n")
    play = [
        {
            "hosts": "all",
            "gather_facts": False,
            "tasks": [{"ansible.builtin.debug": {"msg": "hello"}}],
        }
    ]
    (where / "site.yml").write_text(yaml.safe_dump(play))
    return where


def _inventory(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    local = {"ansible_connection": "local", "ansible_python_interpreter": "auto_silent"}
    path.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": local}}}))
    return path


def test_runs_dir_is_keyed_by_the_inventory_path(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("NETROOT_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    lab = ansible.runs_dir(tmp_path / "lab" / "inventory.yml")
    assert lab.parent == ansible.runs_dir() and lab.name.startswith("inventory-")
    assert ansible.runs_dir(Path("lab/inventory.yml")) == lab  # the same file, however named
    assert ansible.runs_dir(tmp_path / "scratch" / "inventory.yml") != lab


def test_a_throwaway_inventory_does_not_evict_the_labs_runs(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("NETROOT_HOME", str(tmp_path / "home"))
    lab = _inventory(tmp_path / "lab" / "inventory.yml")
    scratch = _inventory(tmp_path / "scratch" / "inventory.yml")
    kept = ansible.runs_dir(lab)
    for i in range(ansible.KEEP_RUNS):  # the lab's last runs, older than any below
        (kept / f"20260101T0000{i:02d}").mkdir(parents=True)
    events: list[str] = []
    outcome = ansible.run_playbook(
        _Plan(scratch), lambda e: events.append(str(e.get("event"))),
        playbooks_dir=_playbooks(tmp_path),
    )  # fmt: skip
    assert outcome.status == "successful" and outcome.rc == 0, outcome.stdout_tail
    assert outcome.run_dir.parent == ansible.runs_dir(scratch)
    assert "runner_on_ok" in events
    assert len(list(kept.iterdir())) == ansible.KEEP_RUNS  # none of the lab's evicted
