from __future__ import annotations

import pytest

from netroot.errors import UsageError
from netroot.rollout.plan import Count, after_batch, make_plan
from tests.unit.core.fleetkit import boards, names

BOARDS = boards([f"pi-{i:02d}" for i in range(1, 8)])


def test_canary_then_batches_skip_boards_already_there() -> None:
    current: dict[str, str | None] = {b.name: "old" for b in BOARDS}
    current["pi-04"] = "new"
    plan = make_plan(BOARDS, current, "new", canary=1, batch=Count(2, False))
    sizes = [len(b) for b in plan.batches]
    assert sizes == [1, 2, 2, 1]
    assert plan.unchanged == (BOARDS[3],)  # the inventory's Board itself
    assert plan.batches[0][0].board is BOARDS[0]
    assert all(s.from_version == "old" for b in plan.batches for s in b)
    assert "pi-04" not in [b.name for b in plan.boards]


def test_percent_batches_and_budget_round_up() -> None:
    plan = make_plan(BOARDS, {}, "v", canary=0, batch=Count(50, True), max_fail=Count(20, True))
    assert [len(b) for b in plan.batches] == [4, 3]
    assert plan.max_failures == 2  # ceil(7 * 0.2)


def test_budget_over_the_whole_rollout_stops_it() -> None:
    plan = make_plan(BOARDS, {}, "v", canary=1, batch=Count(2, False), max_fail=Count(1, False))
    assert after_batch(plan, 0, failed=0, batch_failed=0).go_on
    assert after_batch(plan, 1, failed=1, batch_failed=1).go_on
    stop = after_batch(plan, 2, failed=2, batch_failed=1)
    assert not stop.go_on and "budget" in stop.reason and "whole rollout" in stop.reason


def test_canary_failure_stops_even_within_budget() -> None:
    plan = make_plan(BOARDS, {}, "v", canary=2, max_fail=Count(5, False))
    stop = after_batch(plan, 0, failed=1, batch_failed=1)
    assert not stop.go_on and "canary" in stop.reason


def test_whole_batch_failing_is_decided_by_the_budget() -> None:
    plan = make_plan(BOARDS, {}, "v", canary=0, batch=Count(2, False), max_fail=Count(1, False))
    stop = after_batch(plan, 0, failed=2, batch_failed=2)
    assert not stop.go_on and stop.reason.startswith("failure budget spent: 2 failed")
    roomy = make_plan(BOARDS, {}, "v", canary=0, batch=Count(2, False), max_fail=Count(5, False))
    assert after_batch(roomy, 0, failed=2, batch_failed=2).go_on


def test_last_batch_ends() -> None:
    plan = make_plan(BOARDS[:2], {}, "v", canary=1)
    decision = after_batch(plan, 1, failed=0, batch_failed=0)
    assert not decision.go_on and decision.reason == "all batches done"


@pytest.mark.parametrize("text", ["", "x", "-1", "101%", "2.5"])
def test_bad_counts(text: str) -> None:
    with pytest.raises(UsageError, match="--batch"):
        Count.parse(text, "--batch")


def test_counts_parse() -> None:
    assert Count.parse("25%", "--batch").of(10) == 3
    assert Count.parse("3", "--batch").of(2) == 2
    assert Count.parse("0%", "--max-fail").of(10) == 0


def test_batches_are_paced_per_server() -> None:
    from netroot.rollout.plan import Pacing

    named = [f"pi-{i:02d}" for i in range(1, 9)]
    server_of = {b: ("nfs-01" if i < 6 else "nfs-02") for i, b in enumerate(named)}
    pacing = Pacing({"nfs-01": 2, "nfs-02": 10})
    plan = make_plan(boards(named, server_of), {}, "v2", canary=1, batch=Count(4, False),
                     pacing=pacing)  # fmt: skip
    per_batch = [list(names(b)) for b in plan.batches]
    assert per_batch[0] == ["pi-01"]
    # At most 2 boards of nfs-01 in a batch; nfs-02's boards fill the rest, in order.
    assert per_batch[1:] == [
        ["pi-02", "pi-03", "pi-07", "pi-08"],
        ["pi-04", "pi-05"],
        ["pi-06"],
    ]
    for batch in plan.batches:
        assert sum(s.board.server == "nfs-01" for s in batch) <= 2
    assert sorted(b.name for b in plan.boards) == named  # none lost, none twice


def test_no_pacing_is_todays_split() -> None:
    plan = make_plan(boards(["a", "b", "c", "d", "e"]), {}, "v2", canary=1, batch=Count(2, False))
    assert [names(b) for b in plan.batches] == [("a",), ("b", "c"), ("d", "e")]


def test_boards_of_a_down_server_go_last_and_are_never_the_canary() -> None:
    from netroot.rollout.plan import defer

    named = ["a1", "a2", "b1", "b2", "b3"]
    on = boards(named, {n: f"nfs-{n[0]}" for n in named})  # a1, a2 on nfs-a; the b's on nfs-b
    plan = make_plan(on, {}, "v2", canary=1, batch=Count(2, False), max_fail=Count(2, False))
    assert [names(b) for b in plan.batches] == [("a1",), ("a2", "b1"), ("b2", "b3")]
    moved = defer(plan, {"nfs-a"})
    assert [names(b) for b in moved.batches] == [("b1",), ("b2", "b3"), ("a1", "a2")]
    assert (moved.canary, moved.max_failures) == (1, 2)
    assert defer(plan, set()) is plan
    everyone = defer(plan, {"nfs-a", "nfs-b"})
    assert everyone.canary == 0 and [len(b) for b in everyone.batches] == [5]


def test_fresh_boards_are_prepared_first_in_paced_waves() -> None:
    from netroot.rollout.plan import Pacing, defer

    # c alone on nfs-02; one board of each server switches at a time.
    every = boards(["a", "b", "c", "d", "e"], {"c": "nfs-02"})
    current = {"a": None, "b": "v1", "c": None, "d": None, "e": "v2"}
    pacing = Pacing({"nfs-01": 1, "nfs-02": 1})
    # b runs v1 and e is already there: neither is prepared
    plan = make_plan(every, current, "v2", canary=1, batch=Count(4, False), pacing=pacing,
                     fresh=every)  # fmt: skip
    assert [names(w) for w in plan.prepare] == [("a", "c"), ("d",)]
    assert plan.to_dict()["prepare"] == [["a", "c"], ["d"]]
    assert [names(b) for b in plan.batches] == [("a",), ("b", "c"), ("d",)]
    assert [names(w) for w in defer(plan, {"nfs-02"}).prepare] == [("a",), ("d",)]
    assert [names(w) for w in defer(plan, {"nfs-01"}).prepare] == [("c",)]


def test_one_batch_prepares_nothing() -> None:
    """With one batch every board reboots in it anyway: a round before it would cost a run."""
    three = boards(["a", "b", "c"])
    plan = make_plan(three, {}, "v2", canary=0, batch=Count(100, True), fresh=three)
    assert len(plan.batches) == 1 and plan.prepare == ()
    assert make_plan(three[:1], {}, "v2", canary=1, fresh=three[:1]).prepare == ()
    assert make_plan(three, {}, "v2", canary=1, batch=Count(100, True)).prepare == ()
