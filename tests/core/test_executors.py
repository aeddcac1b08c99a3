"""Tests for dpbayes.core.executors' thread map (the Dask and process paths are in tests/test_dask.py)."""

from __future__ import annotations

import threading
import time

import pytest

from dpbayes.core import executors


def test_thread_count_reads_the_environment_and_refuses_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(executors.THREADS_ENV, "3")
    assert executors.thread_count() == 3
    for bad in ("0", "-1", "two", "1.5", "257"):
        monkeypatch.setenv(executors.THREADS_ENV, bad)
        with pytest.raises(ValueError, match=executors.THREADS_ENV + r" must be an integer in \[1, 256\]"):
            executors.thread_count()
    monkeypatch.delenv(executors.THREADS_ENV)
    assert 1 <= executors.thread_count() <= 8


def test_thread_map_keeps_the_order_of_the_items_and_uses_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(executors.THREADS_ENV, "2")
    names = set()

    def slow_first(i: int) -> int:
        names.add(threading.current_thread().name)
        time.sleep(0.05 if i == 0 else 0.0)  # the first item finishes last
        return i * i

    assert list(executors.thread_map(slow_first, range(6))) == [i * i for i in range(6)]
    assert len(names) == 2 and all(name.startswith("dpbayes") for name in names), names


def test_one_thread_runs_in_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(executors.THREADS_ENV, "1")
    seen = []
    assert list(executors.thread_map(lambda i: seen.append(threading.current_thread()) or i, [1, 2])) == [1, 2]
    assert seen == [threading.current_thread()] * 2


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_limits_blas_within_the_block_and_restores_it() -> None:
    """Inside the block (nested or not) every BLAS library loaded has one thread; the setting from before comes
    back when the block ends, also on an error."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    np.ones(3) @ np.ones(3)  # NumPy's BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        assert before and all(t <= 2 for t in before)
        with executors.one_blas_thread():
            assert _blas_threads() == [1] * len(before)
            with executors.one_blas_thread():
                assert _blas_threads() == [1] * len(before)
            assert _blas_threads() == [1] * len(before)
        assert _blas_threads() == before
        with pytest.raises(RuntimeError, match="inside"):
            with executors.one_blas_thread():
                raise RuntimeError("inside")
        assert _blas_threads() == before
