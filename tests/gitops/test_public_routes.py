"""Public traffic end to end on the simulated cluster (behaviour.md "Public traffic (1.2)"):
a route is created with the service, moves with activation (never changed by a deploy),
shows its URLs in ``status``, is drift-checked, and a domain another project already routes
on the same cluster refuses the change set that wants it."""

from __future__ import annotations

from fixtures import loading
from tests.plugins.git import GitRepoFactory
from tests.plugins.nebula import Nebula

HELLO = loading.project("hello")
ROUTED = HELLO.replace(
    "[environments.staging]\n", '[environments.staging]\ngateway = "infra/public"\n'
).replace("port = 8080", 'port = 8080\ndomains = ["hello.example.com"]')


def test_a_route_serves_the_domain_and_status_shows_its_url(
    nebula: Nebula, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    repo.commit({"nebula.toml": ROUTED})
    nebula.ok(f"project add shop --repo {repo.url}")
    nebula.ok("reconcile --until-idle --timeout 1m")

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
