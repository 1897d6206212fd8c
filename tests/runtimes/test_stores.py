"""The watch cache's store of one kind in one namespace, and the label selectors it answers
lists by: pure, no API server."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.runtimes.kubernetes import selectors
from reconciler.runtimes.kubernetes.kinds import KINDS, MANAGED
from reconciler.runtimes.kubernetes.stores import Store, at_least


def obj(name: str, version: int, labels: dict[str, str] | None = None, **extra: Any) -> Any:
    metadata = {"name": name, "resourceVersion": str(version), "labels": labels or {}}
    return {"metadata": {**metadata, **extra.pop("metadata", {})}, **extra}


# -- label selectors -------------------------------------------------------------------------

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=api", False),
        ("app!=api", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("env in (prod,staging)", True),
        ("env in (staging)", False),
        ("env notin (staging, dev)", True),
        ("app=web,env in (prod),!missing", True),
        ("app=web,tier=back", False),
        (" app = web , tier ", True),
    ],
)
def test_a_selector_selects_as_the_api_server_does(selector: str, selected: bool) -> None:
    assert selectors.matches(selector, {"metadata": {"labels": LABELS}}) is selected


@pytest.mark.parametrize("selector", ["app=(x", "a b", "=web"])
def test_a_selector_it_does_not_understand_is_an_error(selector: str) -> None:
    with pytest.raises(ValueError):
        selectors.parse(selector)


def test_of_labels_is_the_sorted_equality_selector() -> None:
    assert selectors.of_labels({"b": "2", "a": "1"}) == "a=1,b=2"


# -- resource versions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "wanted", "reached"),
    [
        ("10", "9", True),
        ("10", "10", True),
        ("9", "10", False),
        ("abc", "abc", True),
        ("abc", "abd", False),
        ("", "1", False),
        ("10", "x", False),
    ],
)
def test_at_least(version: str, wanted: str, reached: bool) -> None:
    assert at_least(version, wanted) is reached


# -- the store -------------------------------------------------------------------------------


def test_a_store_answers_nothing_until_its_first_list() -> None:
    store = Store(KINDS["Deployment"], "apps/v1")
    assert not store.synced
    store.replace([obj("api-r1", 5)], "7")

    assert store.synced and store.version == "7"
    found = store.get("api-r1")
    assert found is not None
    assert (found["kind"], found["apiVersion"]) == ("Deployment", "apps/v1")  # as a GET says
    store.pause()  # a watch ended
    assert not store.synced
    store.resume()  # the next one connected
    assert store.synced
    store.unsynced()
    store.resume()  # a watch connecting does not make up for a list
    assert not store.synced


def test_events_change_the_store_and_move_its_version_on() -> None:
    store = Store(KINDS["Pod"], "v1")
    store.replace([obj("a", 5), obj("b", 6)], "6")

    store.upsert(obj("c", 7))
    store.upsert(obj("a", 8, spec={"x": 1}))
    store.delete(obj("b", 9))
    store.bookmark("12")

    assert [o["metadata"]["name"] for o in store.list()] == ["a", "c"]
    assert store.get("a") == {**obj("a", 8, spec={"x": 1}), "kind": "Pod", "apiVersion": "v1"}
    assert store.get("b") is None
    assert store.version == "12"


def test_lists_are_by_selector_in_name_order_like_the_api_server() -> None:
    store = Store(KINDS["Pod"])
    store.replace(
        [
            obj("z", 1, {"release": "r-1"}),
            obj("m", 2, {"release": "r-2"}),
            obj("a", 3, {"release": "r-1"}),
        ],
        "3",
    )

    assert [o["metadata"]["name"] for o in store.list("release=r-1")] == ["a", "z"]


@pytest.mark.parametrize(("kind", "trimmed"), [("Pod", True), ("Event", True), ("Service", False)])
def test_managed_fields_are_kept_only_where_something_may_read_them(
    kind: str, trimmed: bool
) -> None:
    store = Store(KINDS[kind])
    store.replace([obj("a", 1, metadata={"managedFields": [{"manager": "nebula"}]})], "1")
    store.upsert(obj("b", 2, metadata={"managedFields": [{"manager": "nebula"}]}))

    for name in ("a", "b"):
        found = store.get(name)
        assert found is not None
        assert ("managedFields" not in found["metadata"]) is trimmed


def test_a_limited_kind_drops_what_changed_least_recently() -> None:
    store = Store(KINDS["Event"])
    limit = KINDS["Event"].limit
    assert limit is not None
    store.replace([obj(f"e{n:05}", n) for n in range(limit)], str(limit))

    store.upsert(obj("e00000", limit + 1))  # changed again: now the most recent
    store.upsert(obj("new", limit + 2))

    assert store.count() == limit
    assert store.get("e00000") is not None and store.get("new") is not None
    assert store.get("e00001") is None


def test_the_kinds_are_nebulas_own_except_warning_events() -> None:
    assert {k for k, w in KINDS.items() if w.label_selector != MANAGED} == {"Event"}
    assert KINDS["Event"].field_selector == "type=Warning"
    assert {
        "Deployment",
        "StatefulSet",
        "ReplicaSet",
        "Pod",
        "Job",
        "Event",
        "Service",
        "ConfigMap",
        "Secret",
        "CronJob",
        "PersistentVolumeClaim",
    } == set(KINDS)


# -- what Nebula wrote -----------------------------------------------------------------------


def test_an_object_written_is_behind_until_the_watch_brings_that_version() -> None:
    store = Store(KINDS["Deployment"])
    store.replace([obj("api-r1", 5)], "5")

    store.expect("api-r1", "9")
    assert store.behind("api-r1")
    store.upsert(obj("api-r1", 7))  # an older change still on its way
    assert store.behind("api-r1")
    store.upsert(obj("api-r1", 9))
    assert not store.behind("api-r1")


def test_a_later_event_of_any_object_means_the_write_arrived() -> None:
    store = Store(KINDS["Deployment"])
    store.replace([], "5")
    store.expect("api-r2", "8")

    store.upsert(obj("other", 7))
    assert store.behind("api-r2")
    store.bookmark("8")
    assert not store.behind("api-r2")


def test_a_write_already_seen_is_not_waited_for() -> None:
    store = Store(KINDS["Deployment"])
    store.replace([obj("api-r1", 5)], "6")

    store.expect("api-r1", "5")  # a no-op apply answers the version the store has
    store.expect("api-r2", "6")
    store.expect("api-r3", "")

    assert not any(store.behind(n) for n in ("api-r1", "api-r2", "api-r3"))


def test_a_list_older_than_the_write_keeps_it_behind_a_newer_one_clears_it() -> None:
    store = Store(KINDS["Deployment"])
    store.replace([obj("api-r1", 5)], "5")
    store.expect("api-r1", "9")

    store.replace([obj("api-r1", 5)], "8")  # a relist that started before the write
    assert store.behind("api-r1")
    store.replace([obj("api-r1", 9)], "10")
    assert not store.behind("api-r1")


def test_a_deleted_object_is_not_waited_for() -> None:
    store = Store(KINDS["Job"])
    store.replace([obj("api-r1-release", 5)], "5")
    store.expect("api-r1-release", "9")

    store.delete(obj("api-r1-release", 10))

    assert not store.behind("api-r1-release")
