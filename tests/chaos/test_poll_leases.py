"""Poll leases, as the chaos run found them: a replica SIGKILLed in the middle of a poll held
its projects for five minutes, so pushes to them went unnoticed until the lease expired. A
poll's lease is now short and renewed while the poll runs."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import partial

import pytest

from reconciler import scheduling
from reconciler.context import Context
from reconciler.gitops import polling
from reconciler.store import leases, schema
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.web.world import set_canary, shop_toml


def _replica(ctx: Context, name: str) -> Context:
    return dataclasses.replace(ctx, settings=ctx.settings.with_(replica_id=name))


@pytest.fixture
def shop(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    git_repo.commit({"nebula.toml": shop_toml(production=False)}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url} --interval 100")
    set_canary(nebula.ctx, "shop", ("staging",))
    return nebula


def _last_polled(nebula: Nebula) -> object:
    with nebula.ctx.db.transaction() as session:
        return session.query(schema.Project).filter_by(slug="shop").one().last_polled_at


def test_a_project_whose_poller_died_mid_poll_is_polled_by_another_within_half_a_minute(
    shop: Nebula,
) -> None:
    # The dead replica had just claimed the project's poll lease when it was killed.
    assert leases.claim(shop.ctx.db, shop.ctx.clock, ["poll:shop"], "dead:1", scheduling.POLL_LEASE)
    other = scheduling.Scheduler(_replica(shop.ctx, "alive:2"))

    shop.clock.advance(29)
    assert other.poll_due().polled == 0
    shop.clock.advance(2)
    assert other.poll_due().polled == 1
    assert _last_polled(shop) == shop.clock.now()


def test_a_live_replica_keeps_its_poll_lease_however_long_the_poll_takes(
    shop: Nebula, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduling, "POLL_RENEW", timedelta(milliseconds=10))
    slow = scheduling.Scheduler(_replica(shop.ctx, "slow:1"))
    other = scheduling.Scheduler(_replica(shop.ctx, "other:2"))
    real_poll = polling.poll
    taken_meanwhile: list[list[str]] = []

    def slow_poll(ctx: Context, slugs: Iterable[str] | None = None) -> polling.PollReport:
        """A remote that takes two minutes to answer: the lease outlives four lease periods."""
        for _ in range(8):
            before = _expiry(shop)
            shop.clock.advance(15)
            _wait_for(partial(_renewed_since, shop, before))
            taken_meanwhile.append(
                leases.claim(
                    other.ctx.db, other.ctx.clock, ["poll:shop"], other.owner, scheduling.POLL_LEASE
                )
            )
        return real_poll(ctx, slugs)

    monkeypatch.setattr(polling, "poll", slow_poll)
    report = slow.poll_due()

    assert report.polled == 1
    assert taken_meanwhile == [[]] * 8
    with shop.ctx.db.transaction() as session:
        assert session.query(schema.Lease).count() == 0  # released once the poll ended


def _renewed_since(nebula: Nebula, before: datetime) -> bool:
    return _expiry(nebula) > before


def _expiry(nebula: Nebula) -> datetime:
    with nebula.ctx.db.transaction() as session:
        lease = session.get(schema.Lease, "poll:shop")
        assert lease is not None
        return lease.expires_at


def _wait_for(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the lease was not renewed"
        time.sleep(0.005)
