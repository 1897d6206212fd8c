"""A batch of calls to the simulated API (``SimulatedApi.batch``, what a tick opens around
its stages): the calls read at once and read one another's writes, and the batch stores
all its writes together when it ends (or none, if it raises)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import event

from reconciler.clock import FakeClock
from reconciler.engine import stepping
from reconciler.errors import UnreachableError
from reconciler.runtimes.simulated import SimulatedCluster
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from tests.runtimes.releases import Service, image, release_objects


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimulatedCluster]:
    """On both stores: a batch's reads take different paths on each (on PostgreSQL, on a
    connection each thread keeps for the batch)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'nebula.db'}"
    else:
        url = request.getfixturevalue("fresh_postgres_url")
    db = Database(url)
    cluster = SimulatedCluster(db, FakeClock(), timedelta(0), {}, Vault(Fernet.generate_key()))
    yield cluster
    db.dispose()


def _names(cluster: SimulatedCluster, namespace: str, kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in cluster.objects(namespace) if o["kind"] == kind}


def test_a_batch_stores_its_writes_when_it_ends_and_its_calls_read_them_before(
    cluster: SimulatedCluster,
) -> None:
    objects = release_objects("bat", 1, Service(image("api", "bat-1")))
    ns = objects.namespace

    with cluster.batch():
        cluster.admit(objects)
        cluster.start(objects)
        assert cluster.objects(ns) == [] and cluster.log() == [], "nothing stored yet"
        rollout = cluster.rollout(objects)
        assert rollout.started and rollout.ready == rollout.desired == 2, "its own workload"
        cluster.start(objects)  # a replayed call: the workload is there already
        cluster.activate(objects)
        assert cluster.selected_release(ns, "api") == "r-1"

    assert _names(cluster, ns, "Deployment") == {"api-r1"}
    assert _names(cluster, ns, "Service") == {"api", "api-r1"}
    assert cluster.log() == [f"start {ns}/api r-1", f"activate {ns}/api r-1"]
    assert cluster.selected_release(ns, "api") == "r-1"


def test_a_deletion_in_a_batch_sees_what_the_batch_applied(cluster: SimulatedCluster) -> None:
    first = release_objects("bat", 1, Service(image("api", "bat-1")))
    second = release_objects("bat", 2, Service(image("api", "bat-2")))
    cluster.start(first)  # on its own: stored at once

    with cluster.batch():
        cluster.start(second)
        cluster.remove(second.namespace, "api", "r-2")  # never took traffic
        cluster.drain(first.namespace, "api", "r-1")

    assert _names(cluster, first.namespace, "Deployment") == set()
    ns = first.namespace
    assert cluster.log() == [
        f"start {ns}/api r-1", f"start {ns}/api r-2", f"remove {ns}/api r-2",
        f"drain {ns}/api r-1",
    ]  # fmt: skip


def test_a_batch_that_raises_stores_nothing(cluster: SimulatedCluster) -> None:
    objects = release_objects("bat", 1, Service(image("api", "bat-1")))

    with pytest.raises(RuntimeError), cluster.batch():
        cluster.admit(objects)
        cluster.start(objects)
        raise RuntimeError("the replica dies before its batch is stored")

    assert cluster.objects(objects.namespace) == [] and cluster.log() == []
    cluster.start(objects)
    assert cluster.log() == [f"start {objects.namespace}/api r-1"], "replayed once, later"


def test_calls_made_on_the_pool_of_workers_join_the_batch(cluster: SimulatedCluster) -> None:
    releases = [
        release_objects("bat", 1, Service(image(unit, "bat-1")), unit=unit)
        for unit in ("api", "web", "jobs", "mail", "search")
    ]

    with cluster.batch():
        results = stepping.run(4, [partial(cluster.start, objects) for objects in releases])
        assert cluster.log() == []

    assert results == [None] * 5
    assert cluster.db.engine.pool.checkedout() == 0, "the batch's connections are returned"  # type: ignore[attr-defined]
    ns = releases[0].namespace
    assert _names(cluster, ns, "Deployment") == {f"{o.unit}-r1" for o in releases}
    assert sorted(cluster.log()) == sorted(f"start {ns}/{o.unit} r-1" for o in releases)


def test_an_api_down_when_the_batch_begins_fails_its_calls_and_stores_nothing(
    cluster: SimulatedCluster,
) -> None:
    objects = release_objects("bat", 1, Service(image("api", "bat-1")))
    cluster.set_reachable(False)

    with cluster.batch():
        for call in (cluster.admit, cluster.start, cluster.rollout, cluster.activate):
            with pytest.raises(UnreachableError):
                call(objects)

    cluster.set_reachable(True)
    assert cluster.objects(objects.namespace) == [] and cluster.log() == []


def test_an_object_deleted_and_applied_again_in_a_batch_is_created_anew(
    tmp_path: Path,
) -> None:
    """As the same calls one by one: removed, then started again, the workload's pods start
    from the beginning (their stage takes its delay again)."""
    db = Database(f"sqlite:///{tmp_path / 'nebula.db'}")
    clock = FakeClock()
    cluster = SimulatedCluster(db, clock, timedelta(seconds=10), {}, Vault(Fernet.generate_key()))
    objects = release_objects("bat", 1, Service(image("api", "bat-1")))
    cluster.start(objects)
    clock.advance(100)
    assert cluster.rollout(objects).ready == 2

    with cluster.batch():
        cluster.remove(objects.namespace, "api", "r-1")
        cluster.start(objects)
        assert cluster.rollout(objects).message == "pods are starting"

    assert cluster.rollout(objects).message == "pods are starting"
    clock.advance(20)
    assert cluster.rollout(objects).ready == 2
    db.dispose()


def test_a_batch_reads_a_namespace_once_however_many_of_its_objects_the_calls_read(
    cluster: SimulatedCluster,
) -> None:
    """The objects its calls read by name, stored before the batch or written by it, are
    what the same calls read one by one; in a batch, one query reads them for a namespace."""
    units = ("api", "web", "jobs", "mail", "search")
    releases = [release_objects("bat", 1, Service(image(u, "bat-1")), unit=u) for u in units]
    for objects in releases[:3]:
        cluster.start(objects)  # stored before the batch; the other two are not started
    ns = releases[0].namespace
    reads: list[str] = []
    with cluster.db.reading() as session:
        reader = session.get_bind()  # (on SQLite, reads have an engine of their own)
    for engine in {cluster.db.engine, reader}:
        event.listen(
            engine, "before_cursor_execute",
            lambda conn, cursor, sql, *_: reads.append(sql) if sql.startswith("SELECT") else None,
        )  # fmt: skip

    with cluster.batch():
        rollouts = [cluster.rollout(objects) for objects in releases]
        for objects in releases[:3]:
            cluster.activate(objects)
        selected = [cluster.selected_release(ns, unit) for unit in units]
        assert len(reads) == 1, reads

    assert [(r.started, r.ready) for r in rollouts] == [(True, 2)] * 3 + [(False, 0)] * 2
    assert [r.message for r in rollouts[3:]] == ["not created yet"] * 2
    assert selected == ["r-1"] * 3 + [None] * 2
    assert [cluster.selected_release(ns, unit) for unit in units] == selected


@pytest.mark.postgres
def test_a_batch_keeps_few_idle_connections_however_many_threads_its_calls_use(
    fresh_postgres_url: str, tmp_path: Path
) -> None:
    """Calls on eight threads of the pool at once (a slow API) hold eight connections while
    they run, as one by one; between calls the batch keeps two, not eight, away from the
    lease keeper and the other jobs."""
    db = Database(fresh_postgres_url)
    clock = FakeClock()
    cluster = SimulatedCluster(
        db, clock, timedelta(0), {}, Vault(Fernet.generate_key()), timedelta(milliseconds=50)
    )
    releases = [
        release_objects("bat", 1, Service(image(f"s{n}", "bat-1")), unit=f"s{n}") for n in range(8)
    ]
    in_use: list[int] = []

    def rollout(objects: object) -> object:
        result = cluster.rollout(objects)  # type: ignore[arg-type]
        in_use.append(db.engine.pool.checkedout())  # type: ignore[attr-defined]
        return result

    try:
        with cluster.batch():
            stepping.run(8, [partial(rollout, objects) for objects in releases])
            assert db.engine.pool.checkedout() <= 2  # type: ignore[attr-defined]
        assert max(in_use) >= 2, "the calls ran side by side"
        assert db.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        db.dispose()
