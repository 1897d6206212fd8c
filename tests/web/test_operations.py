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
from tests.web.world import ThreadedServer


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
    assert samples[("nebula_changesets", (("state", "applied"),))] == 1
    assert samples[("nebula_changesets", (("state", "pending-approval"),))] == 1
    assert samples[("nebula_deployments", (("blocker", "none"), ("state", "healthy")))] == 2
    assert (
        samples[("nebula_deployments", (("blocker", "none"), ("state", "awaiting-approval")))] == 2
    )
    assert samples[("nebula_approvals_pending", ())] == 1
    assert ("nebula_outbox_backlog", ()) in samples
    assert ("nebula_git_fetches_total", ()) in samples


def test_metrics_record_polls_and_ticks(shop: Shop) -> None:
    metrics = Metrics(shop.nebula.ctx)
    report = shop.nebula.reconcile()

    metrics.polled(report.poll, 0.02)
    metrics.ticked(0.003, 0)
    samples = _samples(metrics.render().decode())

    assert samples[("nebula_polls_total", (("result", "ok"),))] == 1
    assert samples[("nebula_poll_duration_seconds_count", ())] == 1
    assert samples[("nebula_tick_duration_seconds_count", ())] == 1
    assert not any(re.search(r"_created$", name) for name, _ in samples)
