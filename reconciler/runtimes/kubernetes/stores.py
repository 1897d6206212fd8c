"""One kind in one namespace as the watch cache holds it: the last list, plus every watch event
since, with a flag saying whether it can answer for the API server right now.

A ``Store`` is written by its informer's thread and read by the reconciler's, under one lock.
Objects are kept as the API server sent them (JSON mappings) and handed out without copying:
readers must not change them. ``synced`` is True from the moment a list completed until the
watch that follows it breaks, except between two watches (``pause`` when one ended,
``resume`` once the next is connected); a store that is not synced answers nothing (the
caller reads the API server instead).

After Nebula writes an object the cache can lag behind the write by the watch's latency, so
a check right after an apply could read the version before it. ``expect`` records the
resourceVersion the write returned; until the watch delivered that version (or anything later
in the namespace's history), ``behind(name)`` is True and callers read the object directly.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.runtimes.kubernetes import selectors
from reconciler.runtimes.kubernetes.kinds import Watched

JSON = Mapping[str, Any]


def resource_version(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def at_least(version: str, wanted: str) -> bool:
    """Has the history reached ``wanted`` at ``version``? resourceVersions are etcd revisions
    (integers) on every API server Nebula supports; anything else only counts when equal."""
    if version.isdigit() and wanted.isdigit():
        return int(version) >= int(wanted)
    return bool(version) and version == wanted


class Store:
    def __init__(self, watched: Watched, api_version: str = "") -> None:
        self.watched = watched
        self.api_version = api_version
        self._lock = threading.Lock()
        self._objects: dict[str, JSON] = {}  # name -> object, least recently changed first
        self._listed = False  # holds a complete list and every event since
        self._paused = False  # ... but no watch is connected right now
        self._version = ""  # how far the watch has read the namespace's history
        self._expected: dict[str, str] = {}  # name -> resourceVersion Nebula wrote

    # -- written by the informer -------------------------------------------------------------

    def replace(self, items: Iterable[JSON], version: str) -> None:
        """A complete list at ``version``: the store is synced from now on."""
        objects = {}
        for item in items:
            prepared = self._prepared(item)
            objects[_name(prepared)] = prepared
        with self._lock:
            self._objects = objects
            self._trim()
            self._advance(version)
            for name in list(self._expected):
                found = self._objects.get(name)
                if found is not None and at_least(resource_version(found), self._expected[name]):
                    del self._expected[name]
            self._listed, self._paused = True, False

    def upsert(self, obj: JSON) -> None:
        prepared = self._prepared(obj)
        name = _name(prepared)
        with self._lock:
            self._objects.pop(name, None)
            self._objects[name] = prepared
            self._trim()
            self._advance(resource_version(prepared))

    def delete(self, obj: JSON) -> None:
        name = _name(obj)
        with self._lock:
            self._objects.pop(name, None)
            self._expected.pop(name, None)  # deleted after what we wrote: nothing to wait for
            self._advance(resource_version(obj))

    def bookmark(self, version: str) -> None:
        with self._lock:
            self._advance(version)

    def unsynced(self) -> None:
        """The watch broke: answer nothing until the next complete list."""
        with self._lock:
            self._listed = False

    def pause(self) -> None:
        """A watch ended: answer nothing until the next one is connected."""
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        """A watch from the store's version is connected: what changed since is on its way."""
        with self._lock:
            self._paused = False

    # -- written by the reconciler -----------------------------------------------------------

    def expect(self, name: str, version: str) -> None:
        """Nebula wrote ``name`` and the API server answered with ``version``."""
        if not version:
            return
        with self._lock:
            found = self._objects.get(name)
            if found is not None and at_least(resource_version(found), version):
                return
            if at_least(self._version, version):
                return
            self._expected[name] = version

    # -- read by the reconciler --------------------------------------------------------------

    @property
    def synced(self) -> bool:
        with self._lock:
            return self._listed and not self._paused

    @property
    def version(self) -> str:
        with self._lock:
            return self._version

    def behind(self, name: str) -> bool:
        """Is the cached ``name`` older than what Nebula last wrote?"""
        with self._lock:
            return name in self._expected

    def get(self, name: str) -> JSON | None:
        with self._lock:
            return self._objects.get(name)

    def list(self, selector: str = "") -> list[JSON]:
        """Objects whose labels ``selector`` selects, as a list by that selector would."""
        with self._lock:
            objects = list(self._objects.values())
        return sorted(
            (o for o in objects if selectors.matches(selector, o)),
            key=_name,
        )

    def count(self) -> int:
        with self._lock:
            return len(self._objects)

    # -- inside the lock ---------------------------------------------------------------------

    def _advance(self, version: str) -> None:
        """The watch read the history up to ``version``: every write before it arrived."""
        if not version:
            return
        self._version = version
        if self._expected:
            for name, wanted in list(self._expected.items()):
                if at_least(version, wanted):
                    del self._expected[name]

    def _trim(self) -> None:
        limit = self.watched.limit
        while limit is not None and len(self._objects) > limit:
            del self._objects[next(iter(self._objects))]

    def _prepared(self, obj: JSON) -> JSON:
        """As a GET would answer: kind and apiVersion set (list items have neither); without
        managedFields where the kind is trimmed."""
        prepared = dict(obj)
        prepared.setdefault("kind", self.watched.kind)
        if self.api_version:
            prepared.setdefault("apiVersion", self.api_version)
        if self.watched.trim and "managedFields" in (obj.get("metadata") or {}):
            metadata = dict(obj["metadata"])
            del metadata["managedFields"]
            prepared["metadata"] = metadata
        return prepared


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))
