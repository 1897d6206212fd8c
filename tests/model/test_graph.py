"""The apply order (databases first, then along the edges, ties by name) and cycles."""

from __future__ import annotations

import itertools

import pytest

from reconciler.model import graph
from reconciler.model.specs import DatabaseSpec, EnvironmentConfig, EnvironmentSpec, ServiceSpec
from tests.model import samples


def svc(name: str, *deps: str, reads: tuple[str, ...] = ()) -> ServiceSpec:
    """A service that depends on ``deps`` and reads ``KEY`` of each unit in ``reads``."""
    variables = tuple((f"FROM_{u.upper().replace('-', '_')}", f"${{{{ {u}.KEY }}}}") for u in reads)
    return ServiceSpec(name, "img", variables=variables, depends_on=deps)


def env(*services: ServiceSpec, databases: tuple[str, ...] = ()) -> EnvironmentConfig:
    return EnvironmentConfig(
        EnvironmentSpec("staging"), services, tuple(DatabaseSpec(d) for d in databases)
    )


def test_databases_come_first_even_when_nothing_depends_on_them() -> None:
    config = env(svc("api"), svc("admin"), databases=("zz-db", "cache"))
    assert graph.apply_order(config) == ["cache", "zz-db", "admin", "api"]


def test_services_follow_their_dependencies_ties_by_name() -> None:
    config = env(
        svc("frontend", "api"),
        svc("api", "search", reads=("db",)),
        svc("search"),
        svc("billing"),
        svc("worker", reads=("api",)),
        databases=("db",),
    )
    assert graph.apply_order(config) == ["db", "billing", "search", "api", "frontend", "worker"]


def test_a_dependency_outranks_name_order() -> None:
    config = env(svc("a", "z"), svc("z"))
    assert graph.apply_order(config) == ["z", "a"]


def test_order_does_not_depend_on_file_order() -> None:
    services = [svc("web", "api"), svc("api", reads=("db",)), svc("mail"), svc("cron", "mail")]
    orders = {
        tuple(graph.apply_order(env(*perm, databases=("db",))))
        for perm in itertools.permutations(services)
    }
    assert orders == {("db", "api", "mail", "cron", "web")}


def test_a_subset_is_ordered_through_a_unit_not_in_it() -> None:
    # web waits for api, which waits for search; deploying web and search alone keeps that.
    config = env(svc("web", "api"), svc("api", "search"), svc("search"))
    assert graph.apply_order(config, ["web", "search"]) == ["search", "web"]
    assert graph.apply_order(config, ["web"]) == ["web"]
    assert graph.apply_order(config, []) == []


def test_subset_names_that_are_not_units_are_ignored() -> None:
    config = env(svc("api"), databases=("db",))
    assert graph.apply_order(config, ["api", "ghost", "db"]) == ["db", "api"]


def test_apply_order_with_a_cycle_still_returns_every_unit_deterministically() -> None:
    config = env(svc("b", "a"), svc("a", "b"), svc("c"), databases=("db",))
    assert graph.apply_order(config) == ["db", "c", "a", "b"]


@pytest.mark.parametrize(
    ("services", "cycle"),
    [
        ((svc("api", "search"), svc("search", "api")), ["api", "search", "api"]),
        (
            (svc("worker", "api"), svc("search", "worker"), svc("api", reads=("search",))),
            ["api", "search", "worker", "api"],
        ),
        ((svc("x", "b"), svc("b", "c"), svc("c", "b")), ["b", "c", "b"]),
        ((svc("api", "search"), svc("search")), None),
        ((svc("api", "api"),), ["api", "api"]),
    ],
)
def test_find_cycle_gives_the_whole_path(
    services: tuple[ServiceSpec, ...], cycle: list[str] | None
) -> None:
    config = env(*services)
    assert graph.find_cycle(config.unit_names, graph.edges(config)) == cycle


def test_cycle_in_a_file_names_every_member() -> None:
    text = (
        samples.ENVIRONMENTS
        + samples.service("api", extra='[services.api.deploy]\ndepends_on = ["worker"]\n')
        + samples.service("worker", extra='[services.worker.variables]\nS = "${{ search.K }}"\n')
        + samples.service("search", extra='[services.search.variables]\nK = "${{ api.K }}"\n')
        + '\n[services.api.variables]\nK = "k"\n'
    )
    line = text.splitlines().index('depends_on = ["worker"]') + 1
    assert samples.messages(text) == [
        f"{line}:14: dependency cycle: api -> worker -> search -> api"
    ]


def test_cycle_made_only_in_one_environment_is_reported_at_the_override() -> None:
    text = (
        samples.ENVIRONMENTS
        + samples.service("api", extra='[services.api.variables]\nK = "k"\n')
        + samples.service("search")
        + '\n[services.search.deploy]\ndepends_on = ["api"]\n'
        + '\n[services.api.environments.production]\ndeploy.depends_on = ["search"]\n'
    )
    line = text.splitlines().index('deploy.depends_on = ["search"]') + 1
    assert samples.messages(text) == [f"{line}:21: dependency cycle: api -> search -> api"]
