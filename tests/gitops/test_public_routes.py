"""Public traffic end to end on the simulated cluster (behaviour.md "Public traffic (1.2)"):
a route is created with the service, moves with activation (never changed by a deploy),
shows its URLs in ``status``, is drift-checked, and a domain another project already routes
on the same cluster refuses the change set that wants it."""

from __future__ import annotations

from fixtures import loading
from tests.engine.livestate import later
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
