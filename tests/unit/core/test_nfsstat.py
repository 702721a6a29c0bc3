"""netroot.nfsstat: the NFS client's counters from /proc/net/rpc/nfs, and what happened between
two reads. The fixtures are real reads from a lab board (kernel 6.1, armhf) against nfs-01."""

from __future__ import annotations

from pathlib import Path

import pytest

from netroot.nfsstat import ClientCounters, CountersError, parse

FIXTURES = Path(__file__).parents[1] / "fixtures" / "nfsstat"
# After a rollout over NFSv4.1: the chroot's Python opened, read and closed its files.
AFTER_ROLLOUT = (FIXTURES / "pi-01-v41-after-rollout.txt").read_text()


def test_a_real_v41_read_names_each_operation_by_the_kernels_number() -> None:
    c = parse(AFTER_ROLLOUT)
    assert (c.calls, c.retrans) == (1137, 0)
    # proc4's counts in order: null read write commit open open_confirm open_noattr ...
    assert c.ops["v4.null"] == 1 and c.ops["v4.read"] == 147
    assert c.ops["v4.open_noattr"] == 168 and c.ops["v4.close"] == 155
    assert (c.ops["v4.access"], c.ops["v4.getattr"], c.ops["v4.lookup"]) == (78, 299, 222)
    # all 69 of 6.1's counters are kept; the ones past the named 48 by number
    assert sum(1 for k in c.ops if k.startswith("v4.")) == 69 and "v4.op68" in c.ops
    assert not any(k.startswith("v3.") for k in c.ops)  # no proc3 line: no v3 mount yet


def test_a_real_read_with_v3_and_v41_mounts_keeps_them_apart() -> None:
    # the board after bench_nfs_profile and a busybox mount (a netboot board's initramfs)
    c = parse((FIXTURES / "pi-01-v3-and-v41-after-bench.txt").read_text())
    assert c.calls == 48407
    # RFC 1813's order: null getattr setattr lookup access readlink read ...
    assert [c.ops[f"v3.{op}"] for op in ("getattr", "lookup", "access", "readlink", "read")] == [
        1749,
        2356,
        1864,
        121,
        2552,
    ]
    assert c.ops["v3.readdirplus"] == 192 and c.ops["v3.commit"] == 0
    assert c.ops["v4.open_noattr"] == 10756 and c.ops["v4.lookup"] == 2598
    # the rpc line counts a few calls no procN line does (5 here): `calls` is the whole cost
    assert c.calls - sum(c.ops.values()) == 5


def test_the_difference_of_two_reads_is_what_happened_between_them() -> None:
    before = parse(AFTER_ROLLOUT)
    later = AFTER_ROLLOUT.replace("rpc 1137 0 1137", "rpc 1142 1 1142").replace(
        "proc4 69 1 147 0 0 1 0 168 0 155", "proc4 69 1 147 0 0 1 0 170 0 157"
    )
    # and a v3 mount appeared meanwhile: one GETATTR
    later += "proc3 22 0 1 " + " ".join(["0"] * 20) + "\n"
    d = parse(later) - before
    assert (d.calls, d.retrans) == (5, 1)
    assert d.ops == {"v4.open_noattr": 2, "v4.close": 2, "v3.getattr": 1}
    assert d.work() == 5
    assert d.summary(top=2) == {
        "calls": 5,
        "work": 5,
        "retrans": 1,
        "top": {"v4.close": 2, "v4.open_noattr": 2},
    }


def test_the_sessions_keepalive_is_not_work() -> None:
    d = ClientCounters(3, 0, {"v4.sequence": 2, "v4.getattr": 1})
    assert d.work() == 1


def test_counters_that_went_down_were_reset() -> None:
    with pytest.raises(CountersError, match="reloaded"):
        _ = parse("rpc 5 0 5\n") - parse(AFTER_ROLLOUT)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no 'rpc' line"),
        ("Filesystem Size Used\n/dev/vda 3.9G 214M\n", "no 'rpc' line"),
        ("rpc 12\n", "not 3"),
        ("rpc 1 0 1\nproc3 22 0 1\n", "one count per operation"),
        ("rpc x 0 1\n", "not a counter line"),
    ],
)
def test_what_is_not_the_counters_file_is_named(text: str, words: str) -> None:
    with pytest.raises(CountersError, match=words):
        parse(text)
