"""The scheduler of ``nebula serve``: due polls with jitter, pushes noticed mid-poll, leases
shared with other replicas, expiry, the tick, and stopping."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from reconciler import bootstrap, scheduling
from reconciler.gitops.polling import PollReport
from reconciler.store import schema
from tests.plugins.git import GitRepo
from tests.plugins.nebula import Nebula
from tests.web.world import API_NEXT, set_canary, shop_toml


def _projects(nebula: Nebula) -> dict[str, schema.Project]:
    with nebula.ctx.db.transaction() as session:
        return {p.slug: p for p in session.query(schema.Project)}


@pytest.fixture
def three(nebula: Nebula, git_repo: GitRepo) -> Nebula:
    """Three projects on one repository (staging only), registered at the same moment."""
    git_repo.commit({"nebula.toml": shop_toml(production=False)}, "First version")
    for slug in ("alpha", "beta", "gamma"):
        nebula.ok(f"project add {slug} --repo {git_repo.url} --interval 100")
        set_canary(nebula.ctx, slug, ("staging",))
    return nebula


def test_only_due_projects_are_polled(three: Nebula) -> None:
    with three.ctx.db.transaction() as session:
        beta = session.query(schema.Project).filter_by(slug="beta").one()
        beta.next_poll_at = three.clock.now() + timedelta(seconds=30)

    report = scheduling.Scheduler(three.ctx).poll_due()

    assert report.polled == 2
    assert _projects(three)["beta"].last_polled_at is None


def test_the_next_poll_comes_a_little_before_the_interval_and_apart(three: Nebula) -> None:
    scheduler = scheduling.Scheduler(three.ctx, rng=random.Random(7))

    scheduler.poll_due()

    projects = _projects(three)
    waits = {p.slug: (p.next_poll_at - p.last_polled_at).total_seconds() for p in projects.values()}  # type: ignore[operator]
    assert all(90 <= w <= 100 for w in waits.values()), waits
    assert len(set(waits.values())) == 3


def test_a_batch_is_limited(three: Nebula) -> None:
    report = scheduling.Scheduler(three.ctx, timings=scheduling.Timings(poll_batch=2)).poll_due()

    assert report.polled == 2
    assert [p.last_polled_at is None for p in _projects(three).values()].count(True) == 1


def test_a_poll_leased_by_another_live_replica_is_left_to_it(three: Nebula) -> None:
    with three.ctx.db.transaction() as session:
        session.add(
            schema.Lease(
                name="poll:alpha",
                owner="other:1",
                expires_at=three.clock.now() + timedelta(minutes=1),
            )
        )
        session.add(
            schema.Lease(
                name="poll:beta",
                owner="dead:2",
                expires_at=three.clock.now() - timedelta(seconds=1),
            )
        )

    report = scheduling.Scheduler(three.ctx).poll_due()

    assert report.polled == 2  # beta's lease expired: taken over
    assert _projects(three)["alpha"].last_polled_at is None
    with three.ctx.db.transaction() as session:
        assert [(lease.name, lease.owner) for lease in session.query(schema.Lease)] == [
            ("poll:alpha", "other:1")
        ]


class PushDuringPoll:
    """An observer that pushes a commit and notifies while the first poll is still running."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        self.scheduler: scheduling.Scheduler | None = None
        self.polls = 0

    def polled(self, report: PollReport, seconds: float) -> None:
        self.polls += 1
        if self.polls == 1 and self.scheduler is not None:
            self.repo.commit(
                {"nebula.toml": shop_toml(api_image=API_NEXT, production=False)}, "Mid-poll push"
            )
            self.scheduler.poll_soon("alpha")

    def ticked(self, seconds: float, moved: int) -> None:
        pass

    def notified(self, channel_kind: str, outcome: str) -> None:
        pass


def test_a_push_noticed_while_its_project_polls_is_polled_once_more(
    three: Nebula, git_repo: GitRepo
) -> None:
    observer = PushDuringPoll(git_repo)
    scheduler = scheduling.Scheduler(
        three.ctx, observer=observer, timings=scheduling.Timings(poll_batch=1)
    )
    observer.scheduler = scheduler

    report = scheduler.poll_due()

    assert observer.polls == 2
    assert report.polled == 2
    changesets = three.changesets("alpha")
    assert [c["message"] for c in changesets] == ["First version", "Mid-poll push"]


def test_the_tick_repeats_while_deployments_move(three: Nebula) -> None:
    scheduler = scheduling.Scheduler(three.ctx, timings=scheduling.Timings(tick_budget=30))
    scheduler.poll_due()

    moved = scheduler.run_tick()

    assert moved > 0
    assert {d["state"] for d in three.deployments("alpha")} == {"healthy"}


@pytest.mark.parametrize(
    ("spent", "waited", "pause"),
    [
        (0.001, 0.0, 0.05),  # a stage just began: checked again within 50 ms
        (0.001, 0.4, 0.05),  # a short rollout: still 50 ms
        (0.001, 5.0, 0.5),  # a tenth of the wait so far...
        (0.001, 600.0, 1.0),  # ...up to a second, however long the wait
        (0.2, 0.0, 0.4),  # a long pass: twice its time, so the store is free two thirds of it
        (0.8, 0.0, 1.0),
    ],
)
def test_the_tick_pauses_longer_the_longer_nothing_moves(
    spent: float, waited: float, pause: float
) -> None:
    assert scheduling.Timings().pause(spent, waited) == pytest.approx(pause)


def test_expiry_ends_approvals_nobody_decided(nebula: Nebula, git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": shop_toml()}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    set_canary(nebula.ctx)
    nebula.settle()
    scheduler = scheduling.Scheduler(nebula.ctx)
    assert scheduler.expire() == 0

    nebula.clock.advance(hours=24, seconds=1)

    assert scheduler.expire() == 1
    [approval] = nebula.approvals()
    assert approval["state"] == "expired"


def test_stopping_waits_for_work_and_releases_this_replicas_leases(three: Nebula) -> None:
    scheduler = scheduling.Scheduler(three.ctx)
    with three.ctx.db.transaction() as session:
        session.add(
            schema.Lease(
                name="poll:alpha",
                owner=scheduler.owner,
                expires_at=three.clock.now() + timedelta(minutes=5),
            )
        )
        session.add(
            schema.Lease(
                name="poll:beta",
                owner="other:1",
                expires_at=three.clock.now() + timedelta(minutes=5),
            )
        )
    scheduler.start()

    assert scheduler.stop(timeout=10) is True

    with three.ctx.db.transaction() as session:
        assert [lease.owner for lease in session.query(schema.Lease)] == ["other:1"]
    scheduler.poll_soon("gamma")  # ignored once stopped
    assert not scheduler.running


# -- a changed interval, and old delivery ids -------------------------------------------------


def test_a_lowered_interval_polls_within_one_tick_on_any_replica(three: Nebula) -> None:
    """``project set alpha interval 1`` (the CLI, one process) is seen by a scheduler that
    shares only the store (another replica): its next check polls alpha."""
    replica = bootstrap.open_context(three.ctx.settings, three.clock)
    try:
        scheduler = scheduling.Scheduler(replica, rng=random.Random(7))
        assert scheduler.poll_due().polled == 3
        three.clock.advance(5)
        assert scheduler.poll_due().polled == 0  # interval 100: 85 s or more to go

        changed = three.ok("project set alpha interval 1")

        polled = _projects(three)["alpha"].last_polled_at
        report = scheduler.poll_due()  # the scheduler checks every `poll_check` (1 s)
        assert changed.out == "alpha: interval = 1\n"
        assert report.polled == 1
        assert _projects(three)["alpha"].last_polled_at == three.clock.now() != polled
        three.clock.advance(1)
        assert scheduler.poll_due().polled == 1  # and every second from now on
    finally:
        replica.db.dispose()


def test_a_raised_interval_moves_the_next_poll_to_an_interval_after_the_last(
    three: Nebula,
) -> None:
    scheduling.Scheduler(three.ctx).poll_due()
    alpha = _projects(three)["alpha"]
    assert alpha.last_polled_at is not None and alpha.next_poll_at is not None
    assert alpha.next_poll_at <= alpha.last_polled_at + timedelta(seconds=100)

    three.ok("project set alpha interval 1h")

    assert _projects(three)["alpha"].next_poll_at == alpha.last_polled_at + timedelta(hours=1)


def test_delivery_ids_older_than_seven_days_are_pruned(three: Nebula) -> None:
    now = three.clock.now()
    with three.ctx.db.transaction() as session:
        project_id = session.query(schema.Project).filter_by(slug="alpha").one().id
        for name, age in (("old", timedelta(days=7, seconds=1)), ("recent", timedelta(days=6))):
            for n in range(50):  # a flood of distinct ids
                session.add(
                    schema.WebhookDelivery(
                        delivery_id=f"{name}-{n}", project_id=project_id, received_at=now - age
                    )
                )

    scheduling.Scheduler(three.ctx).expire()

    with three.ctx.db.transaction() as session:
        kept = {d.delivery_id.split("-")[0] for d in session.query(schema.WebhookDelivery)}
        count = session.query(schema.WebhookDelivery).count()
    assert (kept, count) == ({"recent"}, 50)


def test_drift_checks_run_on_one_replica_at_a_time(nebula: Nebula, git_repo: GitRepo) -> None:
    git_repo.commit({"nebula.toml": shop_toml(production=False)}, "First version")
    nebula.ok(f"project add shop --repo {git_repo.url}")
    set_canary(nebula.ctx, "shop", ("staging",))
    nebula.settle()  # healthy, and checked once since
    nebula.ok("simulated edit shop-staging Deployment/api-r1 spec.replicas 5")
    scheduler = scheduling.Scheduler(nebula.ctx)
    assert scheduler.check_drift() == 0  # not due: checked a moment ago

    nebula.clock.advance(minutes=3)
    with nebula.ctx.db.transaction() as session:
        session.add(
            schema.Lease(
                name="timer:drift",
                owner="other:1",
                expires_at=nebula.clock.now() + timedelta(seconds=30),
            )
        )
    assert scheduler.check_drift() == 0  # another live replica is checking
    assert nebula.unit("staging", "api")["sync"] == "synced"

    nebula.clock.advance(seconds=31)  # ... and died: its lease is taken over
    assert scheduler.check_drift() == 2
    assert nebula.unit("staging", "api")["sync"] == "drifted"
    with nebula.ctx.db.transaction() as session:
        assert session.query(schema.Lease).filter_by(name="timer:drift").count() == 0
