"""The informer loop: list a kind in a namespace, then watch it from the list's
resourceVersion, keeping a ``Store`` current from a background thread.

What the loop does when (the informer pattern of client-go, which Argo CD and Flux rely on)::

    start                          list, store replaced and synced, watch from its version
    event (added/modified/deleted) store updated; bookmarks only move the version on
    the watch ends (server timeout) watch again from the last version seen, unsynced until
                                    the API server accepted it (one that ends at once with
                                    no event waits a backoff)
    410 Gone (version too old)      unsynced; list again at once (after a backoff if the
                                    list before it was already too old)
    any other failure               unsynced; list again after a backoff (0.5 s doubling to
                                    30 s, with jitter), so a dead API server is not hammered;
                                    a refusal (403: no right to watch) waits 5 minutes
    stop()                          the open watch is cut; the thread ends; unsynced

A failure relists rather than resuming the watch: whatever happened while the connection was
down is then in the store the moment it says it is synced again. Until then the store answers
nothing, and the checks read the API server directly, exactly as without a cache: with the
API server unreachable they fail with ``delivery`` as before.

``Source`` is the seam for the wire (``streams.ApiSource``) and for tests (a scripted stream);
``wait`` is how the loop sleeps between attempts, so a test can pass one that does not.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.errors import PermanentError, TransientError
from reconciler.runtimes.kubernetes.stores import Store, resource_version

JSON = Mapping[str, Any]
log = logging.getLogger(__name__)

# How long one watch request may last, as client-go picks it: 5 to 10 minutes, spread so
# that many watches do not all reconnect at once.
WATCH_SECONDS = (300, 600)
STOP_TIMEOUT = 30.0  # a list in flight when stopping finishes within its read timeout


class Expired(TransientError):
    """The API server no longer has the history from the version asked for (410 Gone)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=410)


class Stopped(TransientError):
    """The source was stopped while a request was being made."""


class Source(Protocol):
    def list(self) -> tuple[Sequence[JSON], str]:
        """Every object (items, the list's resourceVersion); raises our errors."""

    def watch(
        self, version: str, timeout_seconds: int, connected: Callable[[], None]
    ) -> Iterator[JSON]:
        """Watch events ({"type", "object"}) after ``version`` until the server ends the
        watch, calling ``connected`` once the API server accepted it; raises ``Expired`` for
        410 Gone, our errors otherwise."""

    def stop(self) -> None:
        """Cuts a watch in progress (called from another thread)."""


@dataclass(frozen=True)
class Backoff:
    first: float = 0.5
    most: float = 30.0
    refused: float = 300.0  # after a permanent refusal, which waiting rarely fixes soon

    def delay(self, failures: int, jitter: float, *, refused: bool = False) -> float:
        """Seconds to wait after ``failures`` failures in a row (``jitter`` in [0, 1))."""
        base = min(self.most, self.first * 2.0 ** max(0, failures - 1))
        if refused:
            base = max(base, self.refused)
        return base * (0.5 + jitter / 2)


class Informer:
    def __init__(
        self,
        store: Store,
        source: Source,
        *,
        name: str,
        backoff: Backoff | None = None,
        wait: Callable[[float], bool] | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self._source = source
        self._backoff = backoff or Backoff()
        self._stopped = threading.Event()
        self._wait = wait or self._stopped.wait
        self._rand = rand
        self._thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.failures = 0  # in a row, for tests and logs
        self.last_error: Exception | None = None

    @property
    def name(self) -> str:
        return self._thread.name

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Asks the loop to end and cuts its watch; ``join`` waits for it."""
        self._stopped.set()
        self._source.stop()

    def join(self, timeout: float = STOP_TIMEOUT) -> None:
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def run(self) -> None:
        """The loop; returns once stopped. Never raises: a failure is waited out and retried."""
        version = ""
        try:
            while not self._stopped.is_set():
                try:
                    if not version:
                        version = self._list()
                    version, heard = self._watch(version)
                    self.store.pause()  # until the next watch is connected
                    if not heard and self._wait(self._pause()):
                        break  # ended at once with nothing said: not a server's timeout
                except Expired:
                    self.store.unsynced()
                    version = ""  # list again at once: the history we had is gone
                    if self.failures and self._wait(self._pause()):
                        break  # ... unless that list's version was gone at once too
                    self.failures = max(self.failures, 1)
                except Exception as exc:  # keep the cache alive whatever broke; say what
                    self.store.unsynced()
                    version = ""
                    if self._stopped.is_set():
                        break
                    self.last_error = exc
                    delay = self._pause(refused=isinstance(exc, PermanentError))
                    # Said once; while the API stays down the retries are only debug lines.
                    (log.info if self.failures == 1 else log.debug)(
                        "watch broken, listing again",
                        extra={"watch": self.name, "error": str(exc), "retry_in": round(delay, 2)},
                    )
                    if self._wait(delay):
                        break
        finally:
            self.store.unsynced()

    def _pause(self, *, refused: bool = False) -> float:
        self.failures += 1
        return self._backoff.delay(self.failures, self._rand(), refused=refused)

    def _list(self) -> str:
        items, version = self._source.list()
        self.store.replace(items, version)
        return version

    def _watch(self, version: str) -> tuple[str, bool]:
        """Applies events until the watch ends: (the version to watch from next, whether
        anything came). A server ending a watch at its timeout sends a bookmark first."""
        low, high = WATCH_SECONDS
        seconds = int(low + (high - low) * self._rand())
        heard = False
        for event in self._source.watch(version, seconds, self.store.resume):
            if self._stopped.is_set():
                break
            version = self._apply(event) or version
            heard = True
            self.failures = 0
        return version, heard or self._stopped.is_set()

    def _apply(self, event: JSON) -> str:
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return ""
        if kind in ("ADDED", "MODIFIED"):
            self.store.upsert(obj)
        elif kind == "DELETED":
            self.store.delete(obj)
        elif kind == "BOOKMARK":
            self.store.bookmark(resource_version(obj))
        return resource_version(obj)
