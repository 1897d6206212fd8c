"""Polling for state that real servers reach asynchronously, with a clear failure message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(probe: Callable[[], T], what: str, timeout: float = 30.0, interval: float = 0.1) -> T:
    """Calls `probe` until it returns something truthy, and returns that.

    On timeout the assertion names `what` and the last value seen, so a failing test says
    where the system got stuck.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {what}; last: {value!r}"
            )
        time.sleep(interval)
