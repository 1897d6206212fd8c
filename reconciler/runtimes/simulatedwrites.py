"""What the simulated API's calls write, held until it is stored.

A call to the simulated API reads at once and writes when it ends. Made on its own, a call
is one transaction: its reads, then its writes. Made inside ``SimulatedApi.batch()`` (the
calls of one tick's batch, as the engine makes them), a call's reads are single queries
and its writes join the batch's. When the batch's calls are done, the whole batch's writes
are stored in one transaction. Before, each call that wrote (three of the six calls a
deployment makes) took a transaction of its own, with a BEGIN and a COMMIT around its
statements and a statement per object it applied.

Nothing a stage decides depends on the difference. The calls of a batch read what the
batch wrote before them (a stage starts a workload, then reads its rollout), from here,
over what the store holds (``Gathered.over``, ``Gathered.within``). And a batch's writes are
stored before the batch is recorded, as each call's were before.

The last write of an object wins, as on an API server; one deleted and then applied again is
created anew. The objects are upserted in key order, so two replicas storing batches that
share objects (a project's Namespace) take their row locks in one order and one waits for
the other. (Deletions come first, in key order of their own; they only touch the objects of
releases the batch's own deployments hold, which no other replica applies.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from reconciler.runtimes.cluster import Manifest

Key = tuple[str, str, str]  # (namespace, kind, name)
_ABSENT = object()


class Found(NamedTuple):
    """An object as a call reads it: its kind, its body as stored, when it was created."""

    kind: str
    body: Manifest
    created_at: datetime


class Listed(NamedTuple):
    """One object of a namespace, as a deletion by label reads it."""

    kind: str
    name: str
    body: Manifest


@dataclass(frozen=True)
class Put:
    body: Manifest
    at: datetime  # when it was first applied in the batch: its creation, if it is new
    fresh: bool = False  # applied after the batch deleted it: a new object, created ``at``


@dataclass
class Writes:
    """The objects applied (``None``: deleted) and the log entries, in the order made."""

    objects: dict[Key, Put | None] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def put(self, key: Key, body: Manifest, at: datetime, *, fresh: bool = False) -> None:
        before = self.objects.get(key, _ABSENT)
        if before is None:
            fresh = True  # deleted, then applied: created again, now
        elif isinstance(before, Put) and not fresh:
            at, fresh = before.at, before.fresh  # applied again: created when it first was
        self.objects[key] = Put(body, at, fresh)

    def delete(self, key: Key) -> None:
        self.objects[key] = None

    def entry(self, text: str) -> None:
        self.log.append(text)

    def __bool__(self) -> bool:
        return bool(self.objects or self.log)

    @property
    def applied(self) -> list[tuple[Key, Put]]:
        """What to upsert, in key order (so concurrent writers lock rows in one order)."""
        return sorted((key, put) for key, put in self.objects.items() if put is not None)

    @property
    def deleted(self) -> list[Key]:
        """What to delete first: the objects deleted, and those deleted and applied again
        (so they are created anew, not updated)."""
        return sorted(key for key, put in self.objects.items() if put is None or put.fresh)


class Gathered:
    """One batch's writes, joined by calls that may run on several threads at once, and what
    its calls read. Whether the API can be reached is read once a batch (a batch sees an
    outage that began before it, not one that begins while its calls are made), and so is
    each object a call reads by its name: the first such read in a namespace reads all of
    the namespace's objects of the kinds stages read (``read_namespace``), one query where a
    batch's calls made one per object. (Another replica's calls do not touch the objects of
    the deployments this one holds: a stage that starts a workload and then reads its
    rollout reads the store once.) A deletion by label reads the namespace each time, seen
    through the batch's writes (``within``); drift checks (``live``) are not made in batches."""

    def __init__(self) -> None:
        self.writes = Writes()
        self.reachable = False  # (until a call of the batch reads that it is)
        self._read: dict[Key, Found | None] = {}
        self._kinds: set[tuple[str, str]] = set()  # (namespace, kind): read whole
        self._lock = threading.Lock()

    def known(self, key: Key) -> bool:
        """Whether the batch has read ``key`` (and so the API as reachable)."""
        with self._lock:
            return key in self._read or (key[0], key[1]) in self._kinds

    def read_namespace(
        self, namespace: str, kinds: Iterable[str], stored: dict[Key, Found]
    ) -> None:
        """What the store holds of ``namespace``'s objects of ``kinds``: ``stored`` (an
        object of those kinds absent from it does not exist)."""
        with self._lock:
            self.reachable = True
            for key, found in stored.items():
                self._read.setdefault(key, found)
            self._kinds.update((namespace, kind) for kind in kinds)

    def read(self, key: Key, stored: Found | None) -> None:
        """What the store holds at ``key``, as a call of the batch read it."""
        with self._lock:
            self.reachable = True
            self._read.setdefault(key, stored)

    def add(self, writes: Writes) -> None:
        with self._lock:
            for key, put in writes.objects.items():
                if put is None:
                    self.writes.delete(key)
                else:
                    self.writes.put(key, put.body, put.at, fresh=put.fresh)
            self.writes.log.extend(writes.log)

    def over(self, key: Key) -> Found | None:
        """The object at ``key`` as the batch left it, over what the store held (``read``)."""
        with self._lock:
            stored = self._read.get(key)
            if key not in self.writes.objects:
                return stored
            put = self.writes.objects[key]
        if put is None:
            return None
        created = stored.created_at if stored is not None and not put.fresh else put.at
        return Found(key[1], put.body, created)

    def within(self, namespace: str, stored: Iterable[Listed]) -> list[Listed]:
        """The objects of ``namespace`` as the batch left them, over what the store holds."""
        with self._lock:
            mine = {key: put for key, put in self.writes.objects.items() if key[0] == namespace}
        seen = [row for row in stored if (namespace, row.kind, row.name) not in mine]
        return seen + [Listed(k[1], k[2], put.body) for k, put in mine.items() if put is not None]
