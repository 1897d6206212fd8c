"""Batched steps: a tick claims its due deployments a batch at a time, reads and records each
batch in a number of statements that does not grow with the batch, and runs the batch's
cluster calls side by side on ``NEBULA_WORKERS`` workers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from reconciler.engine import batching, ticking
from reconciler.gitops import polling
from reconciler.runtimes.simulated import SimulatedCluster
from tests.engine.driving import state_of
from tests.engine.projects import many
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula, nebula_with
from tests.timelines import WITHOUT_RELEASE

ON_POSTGRES = pytest.mark.parametrize(
    "nebula_any_db", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
TRANSACTION = "<a transaction begins>"


def _register(nebula: Nebula, git_repos: GitRepoFactory, projects: dict[str, int]) -> None:
    """Each project with that many services, polled: their first deploys wait in pending."""
    for slug, services in projects.items():
        repo = git_repos.local(slug)
        repo.commit({"nebula.toml": many(services)}, "First version")
        nebula.ok(f"project add {slug} --repo {repo.url}")
    polling.poll(nebula.ctx)


def _states(nebula: Nebula, project: str) -> set[str]:
    return {d["state"] for d in nebula.deployments(project)}


@ON_POSTGRES
def test_a_batch_costs_the_same_statements_whatever_its_size(
    nebula_any_db: Nebula, git_repos: GitRepoFactory
) -> None:
    """On PostgreSQL, where each statement is a round trip. (SQLite's driver has the ORM insert
    events a row at a time: calls into the library, not to a server.)"""
    nebula = nebula_any_db
    _register(nebula, git_repos, {"few": 2, "lots": 8})
    seen: list[str] = []
    engine = nebula.ctx.db.engine
    event.listen(engine, "begin", lambda conn: seen.append(TRANSACTION))
    event.listen(engine, "before_cursor_execute", lambda conn, cursor, sql, *_: seen.append(sql))

    def batch_statements(project: str) -> int:
        """The engine's statements in the transactions of a tick of ``project`` that claim
        and record its batch: all but the tick's last, which looks for anything still moving
        anywhere (the simulated cluster keeps its objects in the same store: its statements
        are left out)."""
        seen.clear()
        ticking.tick(nebula.ctx, project)
        last = len(seen) - seen[::-1].index(TRANSACTION) - 1
        return sum(s != TRANSACTION and "simulated_objects" not in s for s in seen[:last])

    few, lots = [], []
    for _ in WITHOUT_RELEASE[1:]:  # one stage per tick: the simulated cluster takes no time
        few.append(batch_statements("few"))
        lots.append(batch_statements("lots"))
    assert (_states(nebula, "few"), _states(nebula, "lots")) == ({"healthy"}, {"healthy"})
    assert len(nebula.deployments("lots")) == 4 * len(nebula.deployments("few"))
    assert lots == few


def test_one_tick_takes_every_batch(
    nebula: Nebula, git_repos: GitRepoFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _register(nebula, git_repos, {"shop": 8})
    monkeypatch.setattr(batching, "SIZE", 3)
    moved, busy = ticking.tick(nebula.ctx)
    assert (moved, busy) == (8, True)
    assert _states(nebula, "shop") == {"admitted"}


class Watched:
    """The simulated cluster, with ``around(method, unit, call)`` run around each call."""

    def __init__(self, inner: SimulatedCluster, around: Callable[[str, str, Any], Any]) -> None:
        self.inner = inner
        self.around = around

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if not callable(method) or name == "capabilities":
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            unit = getattr(args[0], "unit", "") if args else ""
            return self.around(name, unit, lambda: method(*args, **kwargs))

        return call


class WatchedClusters:
    def __init__(self, cluster: Watched) -> None:
        self.cluster = cluster

    def for_environment(self, contexts: dict[str, str] | None, environment: str) -> Watched:
        return self.cluster

    def simulated(self) -> SimulatedCluster:
        return self.cluster.inner


def _watch(nebula: Nebula, around: Callable[[str, str, Any], Any]) -> None:
    watched = Watched(nebula.ctx.clusters.simulated(), around)
    nebula.ctx.clusters = WatchedClusters(watched)  # type: ignore[assignment]


def test_a_batch_s_cluster_calls_run_side_by_side(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _register(nebula, git_repos, {"shop": 4})
    ticking.tick(nebula.ctx)  # pending -> admitted: no cluster call
    # The four admit calls wait for each other: one after the other, the first would wait
    # alone until the barrier gives up (and its deployment would not be starting).
    together = threading.Barrier(4, timeout=30)

    def around(method: str, unit: str, call: Any) -> Any:
        if method == "admit":
            together.wait()
        return call()

    _watch(nebula, around)
    assert ticking.tick(nebula.ctx) == (4, True)
    assert _states(nebula, "shop") == {"starting"}


@pytest.fixture
def one_worker(tmp_path: Path) -> Iterator[Nebula]:
    yield from nebula_with(tmp_path, workers=1)


def test_with_one_worker_the_calls_take_turns(
    one_worker: Nebula, git_repos: GitRepoFactory
) -> None:
    nebula = one_worker
    _register(nebula, git_repos, {"shop": 4})
    lock = threading.Lock()
    running, most = [0], [0]

    def around(method: str, unit: str, call: Any) -> Any:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            return call()
        finally:
            with lock:
                running[0] -= 1

    _watch(nebula, around)
    nebula.settle()
    assert _states(nebula, "shop") == {"healthy"}
    assert most == [1]


def test_a_call_that_breaks_is_raised_once_the_rest_of_its_batch_is_recorded(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _register(nebula, git_repos, {"shop": 3})
    ticking.tick(nebula.ctx)

    def around(method: str, unit: str, call: Any) -> Any:
        if unit == "api1":
            raise RuntimeError("a bug in a runtime")
        return call()

    _watch(nebula, around)
    with pytest.raises(RuntimeError, match="a bug in a runtime"):
        ticking.tick(nebula.ctx)
    by_unit = {d["service"]: d for d in nebula.deployments("shop")}
    assert {unit: d["state"] for unit, d in by_unit.items()} == {
        "api0": "starting",
        "api1": "admitted",
        "api2": "starting",
    }
    # Its lease was given back with the batch: another replica may take it at once.
    assert ticking.claim(nebula.ctx, int(by_unit["api1"]["id"]), "other-replica:1")
    assert state_of(nebula, by_unit["api1"]["id"]) == "admitted"


def test_a_step_whose_recording_was_judged_to_read_no_neighbours_is_recorded_all_the_same(
    nebula: Nebula, git_repos: GitRepoFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-read under lock loads units and releases only for the steps that read them
    (``_reads_related``); one judged wrong loads what it touches (admitting it, activating
    its release) and ends as it would have."""
    _register(nebula, git_repos, {"shop": 3})
    monkeypatch.setattr(ticking, "_reads_related", lambda step: False)
    for _ in WITHOUT_RELEASE[1:]:
        ticking.tick(nebula.ctx)
    assert _states(nebula, "shop") == {"healthy"}
    services = nebula.status()["environments"][0]["services"]
    assert sorted((u["name"], u["active_release"]) for u in services) == [
        (f"api{n}", "r-1") for n in range(3)
    ]
