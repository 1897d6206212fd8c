"""The informer loop and the cache's registry of informers, on scripted sources: what happens on
each event, at the end of a watch, on 410 Gone, on a broken connection and when stopped, and
how informers are started, found idle, forgotten and closed. No API server, no real waiting."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from reconciler.errors import PermanentError, UnreachableError
from reconciler.runtimes.kubernetes.caching import Cache
from reconciler.runtimes.kubernetes.kinds import KINDS, Watched
from reconciler.runtimes.kubernetes.stores import Store
from reconciler.runtimes.kubernetes.watching import Expired, Informer, Source
from tests.infra.waiting import wait_for

JSON = Mapping[str, Any]


def pod(name: str, version: int) -> JSON:
    return {"metadata": {"name": name, "resourceVersion": str(version)}}


def event(kind: str, name: str, version: int) -> JSON:
    return {"type": kind, "object": pod(name, version)}


def bookmark(version: int) -> JSON:
    return {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(version)}}}


Listed = tuple[list[JSON], str] | Exception
Stream = list[JSON | Exception]


class ScriptedSource:
    """Plays lists and watch streams in order; once the script is spent, a watch waits to be
    stopped (as a quiet watch would), and ``spent`` is set."""

    def __init__(self, lists: list[Listed], streams: list[Stream]) -> None:
        self.lists = list(lists)
        self.streams = list(streams)
        self.watched_from: list[str] = []
        self.before_connected: list[bool | None] = []  # was the store synced, each watch
        self.store: Store | None = None
        self.listed = 0
        self.spent = threading.Event()
        self.stopped = threading.Event()

    def list(self) -> tuple[Sequence[JSON], str]:
        self.listed += 1
        listed = self.lists.pop(0) if self.lists else ([], "0")
        if isinstance(listed, Exception):
            raise listed
        return listed

    def watch(
        self, version: str, timeout_seconds: int, connected: Callable[[], None]
    ) -> Iterator[JSON]:
        assert 300 <= timeout_seconds <= 600
        self.watched_from.append(version)
        self.before_connected.append(self.store.synced if self.store else None)
        connected()
        if not self.streams:
            self.spent.set()
            self.stopped.wait(10)
            return
        for item in self.streams.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item

    def stop(self) -> None:
        self.stopped.set()


class Waits:
    """The loop's ``wait``: records each delay and returns at once (True: stop now)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.delays: list[float] = []
        self.synced_while_waiting: list[bool] = []

    def __call__(self, seconds: float) -> bool:
        self.delays.append(seconds)
        self.synced_while_waiting.append(self.store.synced)
        return False


def run(source: ScriptedSource) -> tuple[Informer, Waits]:
    """Runs an informer until its source's script is spent."""
    store = Store(KINDS["Pod"], "v1")
    source.store = store
    waits = Waits(store)
    informer = Informer(store, source, name="test-watch", wait=waits, rand=lambda: 0.5)
    informer.start()
    try:
        wait_for(source.spent.is_set, "the script to be played")
    finally:
        informer.stop()
        informer.join(5)
    assert not informer.is_alive()
    return informer, waits


def names(store: Store) -> list[str]:
    return [str(o["metadata"]["name"]) for o in store.list()]


def test_it_lists_then_applies_every_event() -> None:
    seen: list[list[str]] = []

    class Recording(ScriptedSource):
        def watch(
            self, version: str, timeout_seconds: int, connected: Callable[[], None]
        ) -> Iterator[JSON]:
            seen.append(names(informer.store))
            yield from super().watch(version, timeout_seconds, connected)

    source = Recording(
        [([pod("a", 1), pod("b", 2)], "2")],
        [[event("ADDED", "c", 3), event("MODIFIED", "a", 4), event("DELETED", "b", 5)]],
    )
    store = Store(KINDS["Pod"], "v1")
    informer = Informer(store, source, name="test-watch", wait=Waits(store), rand=lambda: 0.5)
    informer.start()
    wait_for(source.spent.is_set, "the script to be played")
    assert store.synced  # while the (quiet) watch is up
    informer.stop()
    informer.join(5)

    assert seen[0] == ["a", "b"]  # the list, before any event
    assert names(store) == ["a", "c"]
    assert store.version == "5"
    assert not store.synced  # stopped: it answers nothing any more


def test_a_watch_the_server_ended_goes_on_from_the_last_version_without_a_list() -> None:
    source = ScriptedSource([([pod("a", 1)], "1")], [[event("ADDED", "b", 2), bookmark(7)]])

    informer, waits = run(source)

    assert source.watched_from == ["1", "7"]
    assert source.listed == 1 and waits.delays == []
    # Fresh from the list for the first watch; between two watches, not answering.
    assert source.before_connected == [True, False]
    assert names(informer.store) == ["a", "b"]


def test_410_gone_lists_again_at_once() -> None:
    source = ScriptedSource(
        [([pod("a", 1)], "1"), ([pod("b", 9)], "9")],
        [[event("ADDED", "c", 2), Expired("gone")]],
    )

    informer, waits = run(source)

    assert source.watched_from == ["1", "9"]
    assert source.listed == 2 and waits.delays == []
    assert names(informer.store) == ["b"]  # the list replaced everything


def test_410_again_right_after_a_list_waits_before_listing_again() -> None:
    source = ScriptedSource(
        [([], "1"), ([], "2"), ([], "3")], [[Expired("gone")], [Expired("gone")]]
    )

    _, waits = run(source)

    assert source.listed == 3
    assert len(waits.delays) == 1


def test_a_broken_watch_unsyncs_waits_a_backoff_and_lists_again() -> None:
    broken = UnreachableError("Kubernetes API could not be reached to watch Pod objects")
    source = ScriptedSource(
        [([pod("a", 1)], "1"), broken, broken, ([pod("a", 1), pod("b", 5)], "5")],
        [[event("ADDED", "c", 2), broken]],
    )

    informer, waits = run(source)

    assert waits.synced_while_waiting == [False, False, False]  # direct reads meanwhile
    assert waits.delays == sorted(waits.delays) and waits.delays[0] < waits.delays[-1]
    assert source.watched_from == ["1", "5"]
    assert names(informer.store) == ["a", "b"]
    assert informer.last_error is broken


def test_a_refusal_waits_minutes_not_seconds() -> None:
    refused = PermanentError("Kubernetes API refused to list Pod objects: 403 Forbidden")
    source = ScriptedSource([refused, ([], "1")], [])

    _, waits = run(source)

    assert waits.delays and waits.delays[0] >= 150


def test_a_watch_that_ends_at_once_with_nothing_waits_before_the_next() -> None:
    source = ScriptedSource([([], "1")], [[], []])

    _, waits = run(source)

    assert len(waits.delays) == 2 and waits.delays[0] < waits.delays[1]
    assert source.listed == 1 and source.watched_from == ["1", "1", "1"]


def test_an_unexpected_failure_never_ends_the_thread() -> None:
    source = ScriptedSource([([], "1")], [[{"type": "ADDED", "object": {"metadata": 42}}]])

    informer, _ = run(source)

    assert isinstance(informer.last_error, TypeError | AttributeError)
    assert source.listed == 2


# -- the registry ----------------------------------------------------------------------------


class Sources:
    """The cache's ``Sources``: a scripted source per (kind, namespace), synced at once."""

    def __init__(self) -> None:
        self.made: dict[tuple[str, str], ScriptedSource] = {}
        self.fail: Exception | None = None

    def __call__(self, watched: Watched, namespace: str) -> tuple[Source, str] | None:
        if self.fail is not None:
            raise self.fail
        if watched.kind == "CronJob":
            return None  # as a server serving no CronJob at all
        source = ScriptedSource([([pod("a", 1)], "1")], [])
        self.made[(watched.kind, namespace)] = source
        return source, "v1"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def sources() -> Sources:
    return Sources()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(sources: Sources, clock: Clock) -> Iterator[Cache]:
    cache = Cache(sources, idle=600, monotonic=clock)
    yield cache
    cache.close()


def synced(cache: Cache, kind: str, namespace: str) -> Store:
    wait_for(lambda: cache.view(kind, namespace) is not None, f"{kind} in {namespace} synced")
    found = cache.view(kind, namespace)
    assert found is not None
    return found


def test_the_first_read_starts_the_informer_and_is_not_answered(
    cache: Cache, sources: Sources
) -> None:
    assert cache.view("Pod", "shop-prod") is None
    assert cache.watched() == [("Pod", "shop-prod")]

    store = synced(cache, "Pod", "shop-prod")

    assert names(store) == ["a"]
    assert len(sources.made) == 1  # started once


def test_kinds_it_does_not_keep_or_the_server_does_not_serve_are_never_answered(
    cache: Cache, sources: Sources
) -> None:
    assert cache.view("Ingress", "shop-prod") is None
    assert cache.view("CronJob", "shop-prod") is None
    sources.fail = UnreachableError("Kubernetes API could not be reached to discover")
    assert cache.view("Pod", "shop-prod") is None
    assert cache.watched() == []


def test_a_disabled_cache_starts_nothing(sources: Sources) -> None:
    cache = Cache(sources, enabled=False)
    assert cache.view("Pod", "shop-prod") is None
    assert sources.made == {} and cache.watched() == []


def test_what_nebula_wrote_is_read_directly_until_the_watch_has_it(cache: Cache) -> None:
    store = synced(cache, "Deployment", "shop-prod")

    cache.wrote(
        {"kind": "Deployment", "metadata": {"name": "api-r2", "resourceVersion": "8"}},
        "shop-prod",
    )
    cache.wrote({"kind": "Namespace", "metadata": {"name": "shop-prod", "resourceVersion": "9"}})

    assert store.behind("api-r2")
    store.bookmark("8")
    assert not store.behind("api-r2")


def test_an_informer_nobody_reads_is_stopped_and_restarted_by_the_next_read(
    cache: Cache, sources: Sources, clock: Clock
) -> None:
    synced(cache, "Pod", "shop-prod")
    synced(cache, "Pod", "shop-staging")
    first = cache.informer("Pod", "shop-prod")
    assert first is not None

    clock.now += 300
    cache.view("Pod", "shop-staging")
    clock.now += 400  # shop-prod read 700 s ago, shop-staging 400 s ago
    assert cache.view("Pod", "shop-staging") is not None

    assert cache.watched() == [("Pod", "shop-staging")]
    first.join(5)
    assert not first.is_alive()
    assert cache.view("Pod", "shop-prod") is None  # started again
    assert cache.watched() == [("Pod", "shop-prod"), ("Pod", "shop-staging")]


def test_forget_stops_one_namespaces_informers(cache: Cache) -> None:
    for kind in ("Pod", "Deployment"):
        synced(cache, kind, "shop-prod")
    synced(cache, "Pod", "shop-staging")
    informers = [cache.informer(k, "shop-prod") for k in ("Pod", "Deployment")]

    assert cache.holds("shop-prod", "", ["Deployment"])
    assert not cache.holds("shop-prod", "", ["Job"])
    cache.forget("shop-prod")

    assert cache.watched() == [("Pod", "shop-staging")]
    assert not cache.holds("shop-prod", "", ["Deployment"])
    for informer in informers:
        assert informer is not None
        informer.join(5)
        assert not informer.is_alive()


def test_close_ends_every_thread_and_reads_nothing_after(cache: Cache) -> None:
    for namespace in ("a", "b", "c"):
        synced(cache, "Pod", namespace)

    cache.close()

    assert not [t for t in threading.enumerate() if t.name.startswith("nebula-watch")]
    assert cache.view("Pod", "a") is None and cache.watched() == []
