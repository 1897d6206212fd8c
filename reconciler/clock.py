"""Time is passed in: production code asks a ``Clock``; tests move a ``FakeClock``."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class FakeClock:
    """A clock that moves only when told to; ``sleep`` advances it instead of waiting."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float = 0, **delta: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds, **delta)
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)


def utc(value: datetime) -> datetime:
    """Naive datetimes read back from SQLite are UTC; make them aware."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
