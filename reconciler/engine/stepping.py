"""Running a batch's cluster calls on a bounded pool of workers, with no transaction open.

A tick hands over one call per deployment (its stage, or the removal of an ended release's
objects) and gets back, in the same order, what each returned or the exception it raised:
deployments waiting on a slow API wait side by side, ``NEBULA_WORKERS`` at a time, instead
of one after the other. With one worker (or one call) the calls run in the tick's own thread;
on the pool, each runs in a copy of the tick's context (``contextvars``), so what the tick set
for its batch (``Cluster.batch``) holds for the calls on every thread. The pools are kept for
the process, one per size, their threads started as calls need them.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

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


def run(workers: int, calls: Sequence[Callable[[], T]]) -> list[T | Exception]:
    """Each call's result or exception, in the order of ``calls``, at most ``workers`` at once."""
    if workers <= 1 or len(calls) <= 1:
        return [_caught(call) for call in calls]
    pool = _pool(workers)
    submitted = [pool.submit(contextvars.copy_context().run, _caught, call) for call in calls]
    return [future.result() for future in submitted]
