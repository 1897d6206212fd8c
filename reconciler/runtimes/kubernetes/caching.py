"""The watch cache of one cluster: a ``Store`` and its ``Informer`` for each (kind, namespace)
that something read, started on the first read and kept while it is used.

``view(kind, namespace)`` is the read API: the kind's store in that namespace when it can
answer for the API server (synced), None otherwise. The first view of a kind in a namespace
starts its informer and answers None (the caller reads the API server this once); from the
next one on, once the list came back, it answers from memory. Later features read the same
way (``view("Service", ns).get("api")``, ``view("ConfigMap", ns).list(selector)``).

Memory stays bounded by what Nebula reads: only the namespaces of its releases are watched,
each kind with the selectors in ``kinds``, an informer unused for ``idle`` seconds is stopped
(restarted by the next read), and ``forget(namespace)`` drops a namespace's informers when a
namespace's last unit is torn down. ``close()`` stops every informer and waits for their threads.

``wrote(obj)`` is told of every object Nebula applies, so that a check right after a write
never reads a version older than the write (``stores.Store.expect``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.errors import NebulaError
from reconciler.runtimes.kubernetes.kinds import KINDS, Watched
from reconciler.runtimes.kubernetes.stores import Store, resource_version
from reconciler.runtimes.kubernetes.watching import Informer, Source

IDLE = 30 * 60.0  # seconds an informer nobody read is kept
# (the kind's source in a namespace, its apiVersion), or None when the server serves no such kind
Sources = Callable[[Watched, str], tuple[Source, str] | None]
Informers = Callable[[Store, Source, str], Informer]


def _informer(store: Store, source: Source, name: str) -> Informer:
    return Informer(store, source, name=name)


@dataclass
class _Entry:
    store: Store
    informer: Informer
    used: float


class Cache:
    def __init__(
        self,
        sources: Sources,
        *,
        enabled: bool = True,
        idle: float = IDLE,
        monotonic: Callable[[], float] = time.monotonic,
        informers: Informers = _informer,
    ) -> None:
        self.enabled = enabled
        self._sources = sources
        self._idle = idle
        self._monotonic = monotonic
        self._informers = informers
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._stopping: list[Informer] = []  # stopped, their threads perhaps not ended yet
        self._swept = monotonic()
        self._closed = False

    def view(self, kind: str, namespace: str) -> Store | None:
        """``kind`` in ``namespace`` if the cache can answer for it now, else None (and its
        informer is started if it was not)."""
        watched = KINDS.get(kind)
        if not self.enabled or watched is None or not namespace:
            return None
        now = self._monotonic()
        self._sweep(now)
        with self._lock:
            if self._closed:
                return None
            entry = self._entries.get((kind, namespace))
        if entry is None:
            self._start(watched, namespace, now)
            return None
        entry.used = now
        return entry.store if entry.store.synced else None

    def synced(self, kind: str, namespace: str) -> bool:
        return self.view(kind, namespace) is not None

    def wrote(self, obj: Mapping[str, Any], namespace: str | None = None) -> None:
        """Nebula applied ``obj`` (as the API server answered): reads of it wait for it."""
        metadata = obj.get("metadata") or {}
        key = (str(obj.get("kind") or ""), str(metadata.get("namespace") or namespace or ""))
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None:
            entry.store.expect(str(metadata.get("name") or ""), resource_version(obj))

    def forget(self, namespace: str) -> None:
        """Stops the informers of ``namespace`` (a read starts them again)."""
        with self._lock:
            keys = [k for k in self._entries if k[1] == namespace]
            stopped = [self._entries.pop(k).informer for k in keys]
            self._stopping += stopped
        for informer in stopped:
            informer.stop()

    def holds(self, namespace: str, selector: str, kinds: Iterable[str]) -> bool:
        """Does a store of ``kinds`` in ``namespace`` hold an object ``selector`` selects that
        is not being deleted?"""
        wanted = set(kinds)
        with self._lock:
            stores = [e.store for k, e in self._entries.items() if k[1] == namespace]
        return any(
            not (o.get("metadata") or {}).get("deletionTimestamp")
            for store in stores
            if store.watched.kind in wanted
            for o in store.list(selector)
        )

    def watched(self) -> list[tuple[str, str]]:
        """(kind, namespace) of every running informer."""
        with self._lock:
            return sorted(self._entries)

    def informer(self, kind: str, namespace: str) -> Informer | None:
        with self._lock:
            entry = self._entries.get((kind, namespace))
        return entry.informer if entry is not None else None

    def close(self) -> None:
        """Stops every informer and waits for their threads to end."""
        with self._lock:
            self._closed = True
            stopping = [e.informer for e in self._entries.values()] + self._stopping
            self._entries.clear()
            self._stopping = []
        for informer in stopping:
            informer.stop()
        for informer in stopping:
            informer.join()

    def _start(self, watched: Watched, namespace: str, now: float) -> None:
        try:
            made = self._sources(watched, namespace)
        except NebulaError:
            return  # discovery failed: the caller's direct read says why
        if made is None:
            return
        source, api_version = made
        store = Store(watched, api_version)
        informer = self._informers(store, source, f"nebula-watch {watched.kind} {namespace}")
        with self._lock:
            if self._closed or (watched.kind, namespace) in self._entries:
                return
            self._entries[(watched.kind, namespace)] = _Entry(store, informer, now)
        informer.start()

    def _sweep(self, now: float) -> None:
        """Stops informers nobody read for ``idle`` seconds (looked at once a minute)."""
        if now - self._swept < min(60.0, self._idle):
            return
        with self._lock:
            self._swept = now
            idle = [k for k, e in self._entries.items() if now - e.used >= self._idle]
            stopped = [self._entries.pop(k).informer for k in idle]
            self._stopping = [i for i in self._stopping if i.is_alive()] + stopped
        for informer in stopped:
            informer.stop()
