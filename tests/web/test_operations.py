"""``/healthz`` and ``/metrics``."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from cryptography.fernet import Fernet
from prometheus_client.parser import text_string_to_metric_families

from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.runtimes.registry import Clusters
from reconciler.settings import Settings
from reconciler.store.crypto import Vault
from reconciler.store.database import Database
from reconciler.web.metrics import Metrics
from tests.web.conftest import Shop
from tests.web.world import API_BROKEN, ThreadedServer, eventually, shop_toml


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_healthz_says_ok_when_the_database_answers(live: httpx.Client) -> None:
    answer = live.get("/healthz")

    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "database": "ok"}


def test_healthz_is_503_when_the_database_cannot_be_reached(tmp_path: Path) -> None:
    # Nothing listens on port 1; the URL's password must not show anywhere.
    url = "postgresql+psycopg://nebula:hunter2-pw@127.0.0.1:1/nebula?connect_timeout=1"
    db, clock = Database(url, migrate=False), FakeClock()
    settings = Settings(database_url=url, state_dir=tmp_path)
    vault = Vault(Fernet.generate_key())
    ctx = Context(
        db=db,
        clock=clock,
        settings=settings,
        vault=vault,
        clusters=Clusters(settings, db, clock, vault),
    )
    with ThreadedServer(ctx) as server:
        health = httpx.get(f"{server.url}/healthz", timeout=10)
        metrics = httpx.get(f"{server.url}/metrics", timeout=10)

    assert health.status_code == 503
    assert health.json() == {"status": "unavailable", "database": "unreachable"}
    assert metrics.status_code == 200
    assert _samples(metrics.text)[("nebula_store_up", ())] == 0
    assert "hunter2" not in health.text + metrics.text


def test_metrics_count_what_the_store_holds(shop: Shop, live: httpx.Client) -> None:
    answer = live.get("/metrics")

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = _samples(answer.text)
    assert samples[("nebula_store_up", ())] == 1
    assert samples[("nebula_projects", (("blocker", "none"),))] == 1
    staging = (("environment", "staging"), ("project", "shop"))
    production = (("environment", "production"), ("project", "shop"))
    assert samples[("nebula_changesets", (*staging, ("state", "applied")))] == 1
    assert samples[("nebula_changesets", (*production, ("state", "pending-approval")))] == 1
    healthy = (("blocker", "none"), *staging, ("state", "healthy"))
    assert samples[("nebula_deployments", healthy)] == 2
    waiting = (("blocker", "none"), *production, ("state", "awaiting-approval"))
    assert samples[("nebula_deployments", waiting)] == 2
    assert samples[("nebula_approvals_pending", production)] == 1
    assert samples[("nebula_service_failed", (*staging, ("service", "api")))] == 0
    assert ("nebula_outbox_backlog", ()) in samples
    assert ("nebula_git_fetches_total", ()) in samples


def test_metric_labels_name_only_registered_projects_and_say_which_service_failed(
    shop: Shop, live: httpx.Client
) -> None:
    shop.push(shop_toml(api_image=API_BROKEN), "Broken api image")
    shop.nebula.settle()
    samples = _samples(live.get("/metrics").text)
    failed = {
        labels: value
        for (name, labels), value in samples.items()
        if name == "nebula_service_failed"
    }
    assert failed[(("environment", "staging"), ("project", "shop"), ("service", "api"))] == 1
    assert failed[(("environment", "staging"), ("project", "shop"), ("service", "db"))] == 0
    # A push to a project that is not registered adds no label value.
    assert live.post("/hooks/git/not-registered", content=b"{}").status_code == 404
    # Counted per project as they happen (a push notification, and the poll it asks for) ...
    assert live.post("/hooks/git/shop", content=b"{}").status_code == 202

    def counted() -> list[tuple[tuple[str, str], ...]] | None:
        samples = _samples(live.get("/metrics").text)
        names = {name for name, _ in samples}
        wanted = ("nebula_webhooks_total", "nebula_polls_total")
        return (
            [labels for name, labels in samples if name in wanted] if wanted[1] in names else None
        )

    eventually(counted, timeout=10, what="the poll counted")
    counted_now = counted() or []
    assert (("outcome", "polling"), ("project", "shop")) in counted_now
    assert (("project", "shop"), ("result", "ok")) in counted_now
    # ... and dropped with the project, like the store's series.
    shop.nebula.ok("member add root --role owner")
    shop.nebula.ok("project remove shop --yes --as root")
    after = _samples(live.get("/metrics").text)
    assert not any(
        ("project", "shop") in labels or ("project", "not-registered") in labels
        for _, labels in after
    )


def test_metrics_record_polls_and_ticks(shop: Shop) -> None:
    metrics = Metrics(shop.nebula.ctx)
    report = shop.nebula.reconcile()

    metrics.polled(report.poll, 0.02)
    metrics.ticked(0.003, 0)
    samples = _samples(metrics.render().decode())

    assert samples[("nebula_polls_total", (("project", "shop"), ("result", "ok")))] == 1
    assert samples[("nebula_poll_duration_seconds_count", ())] == 1
    assert samples[("nebula_tick_duration_seconds_count", ())] == 1
    assert not any(re.search(r"_created$", name) for name, _ in samples)
