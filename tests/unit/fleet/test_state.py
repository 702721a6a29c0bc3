from __future__ import annotations

import json
from pathlib import Path

from netroot.fleet.state import RolloutRecord, legacy_path, load_state, state_path


def test_state_round_trips_and_tracks_history(tmp_path: Path) -> None:
    state = load_state(tmp_path)
    board = state.board("pi-01")
    board.assigned = "aaa"
    board.record_good("aaa")
    board.assigned = "bbb"
    board.record_good("bbb")
    state.rollout = RolloutRecord(image="img:1", to_version="bbb", plan={}, started=1.0)
    state.save()
    assert state_path(tmp_path).exists()
    again = load_state(tmp_path)
    assert again.boards["pi-01"].history == ["aaa", "bbb"]
    assert again.boards["pi-01"].previous_good() == "aaa"
    assert again.rollout is not None and again.rollout.to_version == "bbb"
    # No temp file: the state and its event log (netroot.fleet.events).
    assert {p.name for p in tmp_path.iterdir()} == {".netroot-fleet.json", ".netroot-events.jsonl"}


def test_controller_local_file_is_taken_over_on_first_write(tmp_path: Path) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    home.mkdir()
    inv = home / "inventory.yml"
    board = {"assigned": "aaa", "last_good": "aaa", "history": ["aaa"], "smoke_status": "pass"}
    old = {"boards": {"pi-01": board}, "rollout": None}
    legacy_path(inv).write_text(json.dumps(old))
    state = load_state(root, inv)
    assert state.boards["pi-01"].assigned == "aaa"
    assert state.boards["pi-01"].smoke_status == "ok"  # one vocabulary, also for old files
    assert not root.exists()  # reading writes nothing
    state.save()
    assert not legacy_path(inv).exists()
    assert legacy_path(inv).with_name(legacy_path(inv).name + ".taken-over").exists()
    # Any other copy of the inventory now sees the same fleet.
    other = tmp_path / "elsewhere" / "inventory.yml"
    assert load_state(root, other).boards["pi-01"].last_good == "aaa"
