"""The pool a batch's cluster calls run on (``stepping``): calls that return at once stay in
the tick's thread; once the calls wait on the API, the rest of the batch runs beside them, at
most ``NEBULA_WORKERS`` at a time, and the results come back in the order of the calls."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable

import pytest

from reconciler.engine import stepping


def test_calls_that_return_at_once_are_made_in_the_ticks_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stepping, "SLOW", 5.0)  # (however busy the machine running the test)
    threads = stepping.run(8, [threading.get_ident for _ in range(50)])
    assert threads == [threading.get_ident()] * 50


def test_once_a_call_waits_the_rest_of_the_batch_is_made_beside_it() -> None:
    # Each of the four waits for all four: made one after the other, the first would wait
    # alone until the barrier gives up.
    together = threading.Barrier(4, timeout=10)
    results = stepping.run(8, [together.wait for _ in range(4)])
    assert sorted(results) == [0, 1, 2, 3]  # type: ignore[type-var]


def test_at_most_the_workers_calls_at_once_and_results_in_the_order_of_the_calls() -> None:
    lock = threading.Lock()
    running, most = [0], [0]

    def call(n: int) -> Callable[[], int]:
        def slow() -> int:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.01)  # an API that takes 10 ms to answer
            with lock:
                running[0] -= 1
            if n == 7:
                raise RuntimeError("the seventh call breaks")
            return n

        return slow

    results = stepping.run(4, [call(n) for n in range(20)])

    assert most == [4]
    assert results[:7] == list(range(7)) and results[8:] == list(range(8, 20))
    assert isinstance(results[7], RuntimeError)


def test_calls_on_other_threads_see_the_ticks_context() -> None:
    batch: contextvars.ContextVar[str] = contextvars.ContextVar("batch", default="none")
    batch.set("the tick's batch")
    together = threading.Barrier(3, timeout=10)

    def call() -> str:
        together.wait()  # three at once: two of them on other threads
        return batch.get()

    assert stepping.run(3, [call, call, call]) == ["the tick's batch"] * 3


class _Stop(BaseException):
    """What is not an ``Exception`` (a ``KeyboardInterrupt``, a test's simulated crash)."""


def test_what_is_not_an_exception_stops_the_batch_and_is_raised_once_calls_return() -> None:
    started: list[int] = []

    def call(n: int) -> Callable[[], int]:
        def slow() -> int:
            started.append(n)
            time.sleep(0.01)
            if n == 2:
                raise _Stop()
            return n

        return slow

    with pytest.raises(_Stop):
        stepping.run(4, [call(n) for n in range(40)])
    assert len(started) < 40, "no call starts once one has stopped the batch"
