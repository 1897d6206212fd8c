"""A content-addressed cache of rendered objects.

The key is the render's whole input: frozen dataclasses, hashed and compared by *content*, so
an unchanged release, even rebuilt from the store as a new object, is served from the cache,
and any change in it (an image, a variable, the cluster's capabilities) misses. Comparing the
full key on a hit, rather than trusting a digest alone, means a collision cannot serve the
wrong manifests. The cache is bounded (least recently used first out) because a long-running
reconciler renders many releases over time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")

DEFAULT_SIZE = 4096


class ContentCache(Generic[Value]):
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self.entries: OrderedDict[Hashable, Value] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], Value]) -> Value:
        try:
            value = self.entries[key]
        except KeyError:
            self.misses += 1
            value = compute()
            self.entries[key] = value
            if len(self.entries) > self.size:
                self.entries.popitem(last=False)
            return value
        self.hits += 1
        self.entries.move_to_end(key)
        return value

    def clear(self) -> None:
        self.entries.clear()

    def __len__(self) -> int:
        return len(self.entries)
