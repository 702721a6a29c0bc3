"""The lab's trees built at once: order, estimates, progress lines, times kept (no mmdebstrap
here: `images.rootfs` is replaced by a function that writes the tar, so the scheduling is
what is tested; the real builds run in `netroot lab up` and bench/bench_lab_build.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from netroot.lab import recipes
from netroot.lab.host import builds, images
from netroot.lab.recipes import Recipe

BOARD, SERVER, RASPBIAN = recipes.BOARD, recipes.SERVER, recipes.RASPBIAN


def test_longest_first_by_this_caches_own_times_else_the_first_figures() -> None:
    assert builds.schedule([SERVER, RASPBIAN, BOARD], {}) == [BOARD, RASPBIAN, SERVER]
    times = {"server-rootfs-amd64": 900.0}
    assert builds.schedule([SERVER, RASPBIAN, BOARD], times)[0] == SERVER
    assert builds.expected_s(Recipe("new", "armhf", "minbase", ()), {}) == 120.0


def test_a_fresh_machine_starts_the_torch_tree_first() -> None:
    """The demo's seven trees on a cache that never built one: the longest (the torch tree)
    goes first, not after the boards' and Raspbian's trees, the last slot's hundreds of s."""
    from netroot.lab import arch

    trees = [arch.ARMHF.kernel, BOARD, arch.ARM64.kernel, recipes.BOARD_ARM64, SERVER, RASPBIAN,
             recipes.RASPBIAN_TORCH]  # fmt: skip
    assert builds.schedule(trees, {})[0] == recipes.RASPBIAN_TORCH


def test_makespan_of_two_slots() -> None:
    assert builds.makespan_s([300, 240, 80, 40], 2) == 340  # 300+40 | 240+80
    assert builds.makespan_s([300, 240, 80, 40], 1) == 660
    assert builds.makespan_s([], 2) == 0


def test_progress_line_says_time_left_or_that_it_runs_long() -> None:
    line = builds.progress_line({"board-rootfs-armhf": (100, 300), "kernel-armhf": (50, 40)}, 1)
    assert line == (
        "building board-rootfs-armhf 100 s (about 200 s left), "
        "kernel-armhf 50 s (longer than the 40 s expected); 1 waiting"
    )


def test_unreadable_times_are_no_times(tmp_path: Path) -> None:
    assert builds.load_times(tmp_path) == {}
    (tmp_path / builds.TIMES_FILE).write_text("not json")
    assert builds.load_times(tmp_path) == {}
    (tmp_path / builds.TIMES_FILE).write_text('{"a": 3, "b": "x"}')
    assert builds.load_times(tmp_path) == {"a": 3.0}


def test_cached_trees_build_nothing_and_say_nothing(tmp_path: Path) -> None:
    for r in (BOARD, SERVER):
        (tmp_path / r.filename).write_bytes(b"")
    said: list[str] = []
    assert builds.build_all([BOARD, SERVER], tmp_path, said.append) == {}
    assert said == []


def test_missing_trees_build_side_by_side_and_their_times_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running: set[str] = set()
    overlapped = threading.Event()
    lock = threading.Lock()

    def fake_rootfs(recipe: Recipe, cache: Path, report: object) -> Path:
        with lock:
            running.add(recipe.name)
            if len(running) > 1:
                overlapped.set()
        overlapped.wait(5)
        time.sleep(0.05)
        with lock:
            running.discard(recipe.name)
        path = cache / recipe.filename
        path.write_bytes(b"tar")
        return path

    monkeypatch.setattr(images, "rootfs", fake_rootfs)
    said: list[str] = []
    took = builds.build_all([BOARD, RASPBIAN], tmp_path, said.append, workers=2, tick_s=0.01)
    assert overlapped.is_set(), "the two trees were built one after the other"
    assert set(took) == {"board-rootfs-armhf", "raspbian-rootfs-armhf"}
    assert said[0].startswith("building board-rootfs-armhf, raspbian-rootfs-armhf (2 at a time)")
    assert any(line.startswith("building board-rootfs-armhf ") for line in said[1:])
    assert {line for line in said if " built in " in line} == {
        f"{name} built in 0 s" for name in took
    }
    kept = json.loads((tmp_path / builds.TIMES_FILE).read_text())
    assert set(kept) == set(took)


def test_a_failed_build_fails_after_the_others_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_rootfs(recipe: Recipe, cache: Path, report: object) -> Path:
        if recipe is SERVER:
            raise RuntimeError("mirror unreachable")
        time.sleep(0.05)
        (cache / recipe.filename).write_bytes(b"tar")
        return cache / recipe.filename

    monkeypatch.setattr(images, "rootfs", fake_rootfs)
    with pytest.raises(RuntimeError, match="mirror unreachable"):
        builds.build_all([SERVER, BOARD], tmp_path, lambda _m: None, workers=2)
    assert (tmp_path / BOARD.filename).exists()


def test_build_options_never_change_the_key() -> None:
    plain, fast = BOARD.argv("/o.tar"), BOARD.argv("/o.tar", ("--hook-directory=/h",))
    assert [a for a in fast if a != "--hook-directory=/h"] == plain
    assert fast[-4] == "--hook-directory=/h"  # before suite, output and mirror
    kernel = Recipe("kernel", "armhf", "extract", ("busybox-static",), ())
    assert images.build_options(kernel) == ()


def test_eatmydata_is_followed_by_ldconfig_so_the_cache_names_no_removed_library() -> None:
    options = images.build_options(BOARD)
    if f"--hook-directory={images.EATMYDATA_HOOKS}" not in options:
        pytest.skip("this mmdebstrap has no eatmydata hook: the tree is built as before")
    hook = options.index(f"--hook-directory={images.EATMYDATA_HOOKS}")
    assert options[hook + 1] == '--customize-hook=chroot "$1" /sbin/ldconfig'
    # then the foreign tree's bytecode, compiled on the host (test_lab_bytecode.py)
    assert options[hook + 2 :] == images.host_bytecode_hooks()
