"""Reads for the rollout and job checks: from the watch cache when it can answer, from the API
server otherwise, with the same request (path, selectors, ``what``) as without a cache.

The cache answers a read when its store of that kind in that namespace is synced, and:

- a get, unless Nebula wrote the object since the store last heard of it (``behind``);
- a list by label selector, which it filters in memory: the store holds the objects labelled
  ``managed-by=nebula``, and every object a check lists (a release's pods and ReplicaSets, a
  Job's pods) carries that label from the template Nebula rendered;
- a list by field selector only when it is the one the store was watched with (events:
  ``type=Warning``); any other field selector goes to the API server.

Errors are those of the direct read: a cache that cannot answer never fails a check.
"""

from __future__ import annotations

from reconciler.core.states import Blocker
from reconciler.runtimes.kubernetes.caching import Cache
from reconciler.runtimes.kubernetes.transport import JSON, Transport


class Reader:
    def __init__(self, transport: Transport, cache: Cache) -> None:
        self._transport = transport
        self._cache = cache

    def get(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        path: str,
        what: str,
        blocker: Blocker | None = None,
    ) -> JSON | None:
        store = self._cache.view(kind, namespace)
        if store is not None and not store.behind(name):
            found = store.get(name)
            return dict(found) if found is not None else None
        return self._transport.get(path, what=what, missing_ok=True, blocker=blocker)

    def list(
        self,
        kind: str,
        namespace: str,
        *,
        path: str,
        what: str,
        label_selector: str = "",
        field_selector: str = "",
    ) -> list[JSON]:
        store = self._cache.view(kind, namespace)
        if store is not None and field_selector == store.watched.field_selector:
            return [dict(o) for o in store.list(label_selector)]
        query = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        return self._transport.items(path, what=what, query=query)
