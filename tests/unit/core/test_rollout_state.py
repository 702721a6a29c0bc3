from __future__ import annotations

from pathlib import Path

from netroot.rollout.state import RolloutRecord, load_state, state_path


def test_state_round_trips_and_tracks_history(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yml"
    state = load_state(inv)
    board = state.board("pi-01")
    board.assigned = "aaa"
    board.record_good("aaa")
    board.assigned = "bbb"
    board.record_good("bbb")
    state.rollout = RolloutRecord(image="img:1", to_version="bbb", plan={}, started=1.0)
    state.save()
    assert state_path(inv).exists()
    again = load_state(inv)
    assert again.boards["pi-01"].history == ["aaa", "bbb"]
    assert again.boards["pi-01"].previous_good() == "aaa"
    assert again.rollout is not None and again.rollout.to_version == "bbb"
    assert not list(tmp_path.glob(".state-*"))  # no temp file left behind
