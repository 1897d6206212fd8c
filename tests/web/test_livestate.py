"""Live state and suspensions over HTTP: ``/api/v1/projects/{slug}/diff``, the suspend and
resume routes, the status page's sync, drift and suspension, and ``nebula_units_drifted``."""

from __future__ import annotations

import re

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.engine.livestate import PRODUCTION, deployed, later
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula

REPLICAS = {"object": "Deployment/api-r1", "path": "spec.replicas", "live": "5", "desired": "2"}


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    deployed(nebula, git_repo)
    return nebula


def token(nebula: Nebula, who: str) -> dict[str, str]:
    with nebula.ctx.db.transaction() as session:
        return {"Authorization": f"Bearer {people.token(session, nebula.clock, who)}"}


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_diff_route_answers_what_nebula_diff_prints(shop: Nebula, live: httpx.Client) -> None:
    shop.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 5")

    answer = live.get("/api/v1/projects/shop/diff", params={"env": "production", "service": "api"})

    assert answer.status_code == 200
    assert answer.json() == shop.cli("diff shop --env production --service api -o json").json
    [unit] = answer.json()["units"]
    assert (unit["sync"], unit["drift"], unit["release"]) == ("drifted", [REPLICAS], "r-1")
    assert unit["diff"].startswith("--- live/Deployment/api-r1\n+++ r-1/Deployment/api-r1\n")
    assert live.get("/api/v1/projects/nowhere/diff").status_code == 404
    shop.ctx.clusters.simulated().set_reachable(False)
    unreachable = live.get("/api/v1/projects/shop/diff")
    assert unreachable.status_code == 503
    assert unreachable.json()["code"] == "delivery"


def test_status_carries_sync_drift_and_suspensions(shop: Nebula, live: httpx.Client) -> None:
    shop.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 5")
    later(shop)
    shop.ok("suspend shop --env production --reason 'incident 42' --as alice")

    [project] = live.get("/api/v1/status", params={"project": "shop"}).json()["projects"]

    assert project == shop.status()
    production = project["environments"][1]
    assert production["suspended"]["by"] == "alice"
    api = next(s for s in production["services"] if s["name"] == "api")
    assert (api["sync"], api["drift"]) == ("drifted", [REPLICAS])


def test_suspend_and_resume_through_the_api(shop: Nebula, live: httpx.Client) -> None:
    admin = token(shop, "bob")

    suspended = live.post(
        "/api/v1/projects/shop/suspend",
        json={"environment": "production", "reason": "incident 42"},
        headers=admin,
    )
    assert suspended.status_code == 200
    body = suspended.json()
    assert (body["project"], body["environment"], body["suspended"]["by"]) == (
        "shop",
        "production",
        "bob",
    )
    assert body["suspended"]["reason"] == "incident 42" and body["changesets"] == []
    again = live.post(
        "/api/v1/projects/shop/suspend", json={"env": "production", "reason": "x"}, headers=admin
    )
    assert again.status_code == 409
    member = live.post(
        "/api/v1/projects/shop/resume", json={"env": "production"}, headers=token(shop, "mia")
    )
    assert member.status_code == 403
    assert (
        live.post("/api/v1/projects/shop/suspend", json={"reason": ""}, headers=admin).status_code
        == 422
    )

    resumed = live.post("/api/v1/projects/shop/resume", json={"env": "production"}, headers=admin)
    assert resumed.status_code == 200
    assert resumed.json()["suspended"] is None
    assert shop.status()["environments"][1]["suspended"] is None


def test_the_status_page_shows_sync_drift_and_suspensions(shop: Nebula, live: httpx.Client) -> None:
    shop.ok(f"simulated delete {PRODUCTION} Service/api")
    shop.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 5")
    later(shop)
    shop.ok("suspend shop --env production --reason 'incident <42>' --as alice")

    page = live.get("/projects/shop")
    text = _text(page.text)

    assert page.status_code == 200
    card = page.text[page.text.index('id="service-production-api"') :]
    card = card[: card.index("</li>")]
    assert '<span class="badge bad sync"' in card and ">drifted</span>" in card
    assert "Service/api missing" in _text(card)
    assert "Deployment/api-r1 spec.replicas 5 2" in _text(card)
    staging = page.text[page.text.index('id="service-staging-api"') :]
    assert ">synced</span>" in staging[: staging.index("</li>")]
    assert "Suspended environment by alice" in text and "incident &lt;42&gt;" in page.text
    overview = _text(live.get("/").text)
    assert "1 drifted" in overview and "production protected suspended" in overview


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_count_the_drifted_units_of_each_environment(
    shop: Nebula, live: httpx.Client
) -> None:
    shop.ok(f"simulated edit {PRODUCTION} Deployment/api-r1 spec.replicas 5")
    shop.ok(f"simulated edit {PRODUCTION} StatefulSet/db spec.replicas 0")
    later(shop)

    samples = _samples(live.get("/metrics").text)

    name = "nebula_units_drifted"
    assert samples[(name, (("environment", "production"), ("project", "shop")))] == 2
    assert samples[(name, (("environment", "staging"), ("project", "shop")))] == 0
