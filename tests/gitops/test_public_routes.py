"""Public traffic end to end on the simulated cluster (behaviour.md "Public traffic (1.2)"):
a route is created with the service, moves with activation (never changed by a deploy),
shows its URLs in ``status``, is drift-checked, and a domain another project already routes
on the same cluster refuses the change set that wants it."""

from __future__ import annotations

from fixtures import loading
from tests.engine.livestate import later, live_object
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula

HELLO = loading.project("hello")
ROUTED = HELLO.replace(
    "[environments.staging]\n", '[environments.staging]\ngateway = "infra/public"\n'
).replace("port = 8080", 'port = 8080\ndomains = ["hello.example.com"]')


def _deployed(nebula: Nebula, git_repos: GitRepoFactory, text: str) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": text})
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")


def test_a_route_serves_the_domain_and_status_shows_its_url(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _deployed(nebula, git_repos, ROUTED)

    unit = nebula.unit("staging", "hello")
    assert unit["active_release"] == "r-1"
    assert unit["urls"] == ["https://hello.example.com"]
    assert unit["processes"] == [{"name": "web", "type": "http", "replicas": 1, "autoscale": None}]
    table = nebula.ok("status shop").out
    assert "  staging hello: https://hello.example.com\n" in table
    assert unit["sync"] == "synced"


def test_a_domain_routed_by_another_project_is_not_applied(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    first, second = git_repos.local("billing"), git_repos.local("shop")
    first.commit({"nebula.toml": ROUTED})
    second.commit({"nebula.toml": HELLO})
    nebula.ok(f"project add billing --repo {first.url}")
    nebula.ok(f"project add shop --repo {second.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert nebula.unit("staging", "hello", project="shop")["active_release"] == "r-1"

    second.commit({"nebula.toml": ROUTED}, "Route hello.example.com here too")
    nebula.ok("reconcile --until-idle --timeout 1m")

    changeset = nebula.changesets("shop")[-1]
    assert changeset["state"] == "draft"
    assert changeset["note"] == "hello.example.com is already routed by billing/staging."
    lines = {(line["service"], line["field"]) for line in changeset["lines"]}
    assert ("hello", "processes.web.domains") in lines
    assert nebula.unit("staging", "hello", project="shop")["urls"] == []
    refused = nebula.cli("changeset", "apply", str(changeset["id"]))
    assert refused.code == 1
    assert refused.err == (
        f"error: Change set {changeset['id']} not applied: hello.example.com is already routed "
        "by billing/staging.\n"
    )
    events = [e.message for e in nebula.events()]
    assert "Not applied: hello.example.com is already routed by billing/staging." in events


def test_status_shows_what_the_autoscaler_runs_and_it_is_not_drift(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _deployed(
        nebula,
        git_repos,
        HELLO.replace("port = 8080", "port = 8080\nautoscale = { min = 2, max = 6 }"),
    )
    scale = {"min": 2, "max": 6, "cpu_percent": 80}
    assert nebula.unit("staging", "hello")["processes"] == [
        {"name": "web", "type": "http", "replicas": None, "autoscale": {**scale, "current": 2}}
    ]

    nebula.ok("simulated edit shop-staging Deployment/hello-r1 spec.replicas 5")  # the HPA
    later(nebula)

    unit = nebula.unit("staging", "hello")
    assert (unit["sync"], unit["drift"]) == ("synced", [])
    assert unit["processes"][0]["autoscale"] == {**scale, "current": 5}
    table = nebula.ok("status shop").out
    assert "  staging hello.web: 5 replicas (autoscaled 2-6 at 80% cpu)\n" in table


def test_a_route_changed_behind_nebula_s_back_is_drift(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    _deployed(nebula, git_repos, ROUTED)

    nebula.ok(
        'simulated edit shop-staging HTTPRoute/hello-web spec.hostnames[0] "evil.example.com"'
    )
    later(nebula)

    unit = nebula.unit("staging", "hello")
    assert unit["sync"] == "drifted"
    assert [(d["object"], d["path"]) for d in unit["drift"]] == [
        ("HTTPRoute/hello-web", "spec.hostnames")
    ]


def test_domains_removed_take_the_route_away_and_a_rollback_brings_it_back(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": ROUTED})
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert live_object(nebula, "shop-staging", "HTTPRoute", "hello-web") is not None

    repo.commit({"nebula.toml": ROUTED.replace('\ndomains = ["hello.example.com"]', "")})
    nebula.ok("reconcile --until-idle --timeout 1m")

    assert nebula.unit("staging", "hello")["active_release"] == "r-2"
    assert live_object(nebula, "shop-staging", "HTTPRoute", "hello-web") is None
    assert nebula.unit("staging", "hello")["urls"] == []

    nebula.ok("rollback shop hello --env staging")
    nebula.ok("reconcile --until-idle --timeout 1m")
    assert live_object(nebula, "shop-staging", "HTTPRoute", "hello-web") is not None


def test_two_projects_claiming_one_domain_in_one_pass_do_not_both_route_it(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    for slug in ("billing", "shop"):
        repo = git_repos.local(slug)
        repo.commit({"nebula.toml": ROUTED})
        nebula.ok(f"project add {slug} --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")

    routed = [
        slug
        for slug in ("billing", "shop")
        for env in nebula.status(slug)["environments"]
        for unit in env["services"]
        if unit["urls"]
    ]
    assert routed == ["billing"]
    [changeset] = nebula.changesets("shop")
    assert changeset["note"] == "hello.example.com is already routed by billing/staging."
