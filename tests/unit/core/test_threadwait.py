"""threadwait.results: Executor.map's answers, in order, its exception raised (the Ctrl-C it
lets through is tests/unit/cli/test_interrupt.py::test_ctrl_c_taken_by_a_worker_thread)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from netroot import threadwait


def test_results_in_submission_order_whatever_the_order_they_end() -> None:
    first_may_end = threading.Event()

    def job(n: int) -> int:
        if n == 0:
            assert first_may_end.wait(10)
        else:
            first_may_end.set()
        return n * 10

    with ThreadPoolExecutor(2) as pool:
        assert threadwait.results([pool.submit(job, n) for n in (0, 1)]) == [0, 10]


def test_a_job_s_exception_is_raised() -> None:
    def job(n: int) -> int:
        if n:
            raise ValueError(f"job {n}")
        return n

    with ThreadPoolExecutor(2) as pool, pytest.raises(ValueError, match="job 1"):
        threadwait.results([pool.submit(job, n) for n in (0, 1)])
