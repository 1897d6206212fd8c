"""Running a batch's cluster calls on a bounded pool of workers, with no transaction open.

A tick hands over one call per deployment (its stage, or the removal of an ended release's
objects) and gets back, in the same order, what each returned or the exception it raised.

The calls start in the tick's own thread, one after the other. While each returns at once
(the simulated cluster, a read from a watch cache), that is all: threads cost more than
they give to calls that do not wait (on one CPU, a batch of such calls took a fifth longer
on eight threads than in one). As soon as no call has finished for ``SLOW``, the calls are
waiting on the API, and the rest of the batch is handed to ``NEBULA_WORKERS - 1`` more
threads as well. Deployments waiting on a slow API then wait side by side, at most
``NEBULA_WORKERS`` at a time, not one after the other. With one worker (or one call) every
call runs in the tick's thread.

Each call on another thread runs in a copy of the tick's context (``contextvars``), so what
the tick set for its batch (``Cluster.batch``) holds on every thread. The pools are kept for
the process, one per size, their threads started as calls need them.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar, cast

T = TypeVar("T")

SLOW = 0.002  # seconds without a call finishing: the calls are waiting on the API

_pools: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    with _lock:
        pool = _pools.get(workers)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nebula-step")
            _pools[workers] = pool
        return pool


def _caught(call: Callable[[], T]) -> T | Exception:
    try:
        return call()
    except Exception as exc:  # the caller decides what each kind of failure means
        return exc


class _Calls(Generic[T]):
    """A batch's calls, taken one at a time by whichever thread is free."""

    def __init__(self, calls: Sequence[Callable[[], T]]) -> None:
        self.calls = calls
        self.results: list[T | Exception | None] = [None] * len(calls)
        self.done = threading.Event()  # set once no call is running and none will start
        self.escaped: BaseException | None = None  # (then no further call is started)
        self._taken = 0
        self._finished = 0
        self._lock = threading.Lock()

    @property
    def finished(self) -> int:
        with self._lock:
            return self._finished

    def make(self) -> None:
        """Make calls not yet taken until there are none (or one raised what is not an
        ``Exception``, such as ``KeyboardInterrupt``: ``run`` raises it once the calls
        already running have returned)."""
        while True:
            with self._lock:
                if self._taken == len(self.calls) or self.escaped is not None:
                    return
                index, self._taken = self._taken, self._taken + 1
            try:
                self.results[index] = _caught(self.calls[index])
            except BaseException as exc:
                with self._lock:
                    self.escaped = self.escaped or exc
            finally:
                with self._lock:
                    self._finished += 1
                    last = self._taken == len(self.calls) or self.escaped is not None
                    if last and self._finished == self._taken:
                        self.done.set()


def run(workers: int, calls: Sequence[Callable[[], T]]) -> list[T | Exception]:
    """Each call's result or exception, in the order of ``calls``, at most ``workers`` at once."""
    if workers <= 1 or len(calls) <= 1:
        return [_caught(call) for call in calls]
    batch = _Calls(calls)
    context = contextvars.copy_context()
    helpers: list[Future[None]] = []

    def watch() -> None:
        seen = 0
        while not batch.done.wait(SLOW):
            finished = batch.finished
            if finished == seen:  # none finished meanwhile: hand the rest to more threads
                pool = _pool(workers - 1)
                helpers.extend(
                    pool.submit(context.copy().run, batch.make) for _ in range(workers - 1)
                )
                return
            seen = finished

    watchdog = threading.Thread(target=watch, name="nebula-step-watch", daemon=True)
    watchdog.start()
    batch.make()
    batch.done.wait()  # (the calls the other threads took)
    watchdog.join()
    for helper in helpers:
        helper.result()
    if batch.escaped is not None:
        raise batch.escaped
    return cast("list[T | Exception]", batch.results)  # (every one filled in)
