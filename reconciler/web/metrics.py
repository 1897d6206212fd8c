"""``/metrics``: what the scheduler did (counted as it happens) and what the store holds
(counted when scraped, so several replicas report the same totals for stored things).

Each app has its own registry: nothing here is process-global, so tests can build several.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from reconciler.context import Context
from reconciler.core.states import ApprovalState, Sync
from reconciler.gitops.polling import PollReport
from reconciler.store import schema

log = logging.getLogger("nebula.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# ``*_created`` series say when a counter was made; nobody graphs them.
disable_created_metrics()  # type: ignore[no-untyped-call]

_FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    def __init__(self, ctx: Context) -> None:
        self.registry = CollectorRegistry()
        self.polls = Counter(
            "nebula_polls",
            "Projects polled, by project and result (ok, delivery, configuration)",
            ["project", "result"],
            registry=self.registry,
        )
        self.poll_duration = Histogram(
            "nebula_poll_duration_seconds",
            "Time one poll of a batch of projects took",
            buckets=_FAST,
            registry=self.registry,
        )
        self.tick_duration = Histogram(
            "nebula_tick_duration_seconds",
            "Time one reconcile tick took",
            buckets=_FAST,
            registry=self.registry,
        )
        # Counted once the project was found in the store (an unknown one is 404, counted
        # nowhere), so its label takes only registered slugs.
        self.webhooks = Counter(
            "nebula_webhooks",
            "Push notifications received, by project and outcome "
            "(polling, duplicate, ignored, coalesced, unauthorized)",
            ["project", "outcome"],
            registry=self.registry,
        )
        # Labels from two enums (the channel kinds, delivered or failed): bounded.
        self.notifications = Counter(
            "nebula_notifications",
            "Notification delivery attempts by this process, by channel kind and outcome "
            "(delivered, failed)",
            ["channel_kind", "outcome"],
            registry=self.registry,
        )
        self.ctx = ctx
        self.registry.register(StoreCollector(ctx))
        # The (counter, project, other label) series counted so far, so that a removed
        # project's are dropped at the next scrape, as the store's gauges are.
        self._counted: set[tuple[Counter, str, str]] = set()
        self._lock = threading.Lock()

    def _count(self, counter: Counter, project: str, value: str) -> None:
        with self._lock:
            counter.labels(project, value).inc()
            self._counted.add((counter, project, value))

    def webhook(self, project: str, outcome: str) -> None:
        self._count(self.webhooks, project, outcome)

    # The scheduler's Observer.
    def polled(self, report: PollReport, seconds: float) -> None:
        for slug, result in report.results.items():
            self._count(self.polls, slug, result)
        self.poll_duration.observe(seconds)

    def ticked(self, seconds: float, moved: int) -> None:
        self.tick_duration.observe(seconds)

    def notified(self, channel_kind: str, outcome: str) -> None:
        self.notifications.labels(channel_kind, outcome).inc()

    def render(self) -> bytes:
        self._forget_removed()
        return generate_latest(self.registry)

    def _forget_removed(self) -> None:
        try:
            with self.ctx.db.reading() as session:
                registered = set(session.scalars(select(schema.Project.slug)))
        except Exception:  # the store is down: the scrape says so (nebula_store_up 0)
            return
        with self._lock:
            for counted in [c for c in self._counted if c[1] not in registered]:
                counter, project, value = counted
                counter.remove(project, value)
                self._counted.discard(counted)


class StoreCollector(Collector):
    """Counts read from the state store at scrape time."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def describe(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        yield from self._families()

    def _families(self) -> tuple[GaugeMetricFamily | CounterMetricFamily, ...]:
        return (
            GaugeMetricFamily("nebula_store_up", "1 when the state store answered this scrape"),
            GaugeMetricFamily(
                "nebula_projects", "Registered projects, by blocker", labels=["blocker"]
            ),
            GaugeMetricFamily(
                "nebula_changesets",
                "Change sets, by project, environment and state",
                labels=["project", "environment", "state"],
            ),
            GaugeMetricFamily(
                "nebula_deployments",
                "Deployments, by project, environment, state and blocker",
                labels=["project", "environment", "state", "blocker"],
            ),
            GaugeMetricFamily(
                "nebula_approvals_pending",
                "Approvals waiting for a decision, by project and environment",
                labels=["project", "environment"],
            ),
            GaugeMetricFamily(
                "nebula_service_failed",
                "1 when a service's (or database's) latest deployment ended failed, else 0",
                labels=["project", "environment", "service"],
            ),
            GaugeMetricFamily("nebula_outbox_backlog", "Notifications not yet delivered"),
            GaugeMetricFamily(
                "nebula_units_drifted",
                "Services and databases whose live objects differ from their active release",
                labels=["project", "environment"],
            ),
            CounterMetricFamily("nebula_git_fetches", "Fetches from git remotes by this process"),
            CounterMetricFamily(
                "nebula_git_remote_calls", "Calls to git remotes (ref listings) by this process"
            ),
        )

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        (
            up,
            projects,
            changesets,
            deployments,
            approvals,
            failed,
            outbox,
            drifted,
            fetches,
            calls,
        ) = self._families()
        if self.ctx.git is not None:
            counters = self.ctx.git.counters()
            fetches.add_metric([], counters.fetches)
            calls.add_metric([], counters.remote_calls)
        try:
            with self.ctx.db.reading() as session:
                for blocker, n in session.execute(
                    select(schema.Project.blocker, func.count()).group_by(schema.Project.blocker)
                ):
                    projects.add_metric([blocker or "none"], n)
                # Labels come from rows that exist (registered projects, their environments and
                # units), read afresh at each scrape: a removed project's series are gone at the
                # next one, and nothing a request sends can make a new label value.
                for slug, env, state, n in session.execute(
                    _by_environment(schema.ChangeSet, schema.ChangeSet.state)
                ):
                    changesets.add_metric([slug, env, state], n)
                for slug, env, state, blocker, n in session.execute(
                    _by_environment(
                        schema.Deployment, schema.Deployment.state, schema.Deployment.blocker
                    )
                ):
                    deployments.add_metric([slug, env, state, blocker or "none"], n)
                for slug, env, n in session.execute(
                    _by_environment(schema.Approval).where(
                        schema.Approval.state == ApprovalState.PENDING.value
                    )
                ):
                    approvals.add_metric([slug, env], n)
                for slug, env, service, state in _latest_states(session):
                    failed.add_metric([slug, env, service], int(state == "failed"))
                outbox.add_metric(
                    [],
                    session.scalar(
                        select(func.count())
                        .select_from(schema.OutboxMessage)
                        .where(schema.OutboxMessage.delivered_at.is_(None))
                    )
                    or 0,
                )
                # Every environment, 0 when nothing drifted there (so `> 0` alerts can fire).
                for slug, env, n in session.execute(
                    select(
                        schema.Project.slug,
                        schema.Environment.name,
                        func.count(schema.Unit.id),
                    )
                    .join(schema.Environment, schema.Environment.project_id == schema.Project.id)
                    .outerjoin(
                        schema.Unit,
                        (schema.Unit.environment_id == schema.Environment.id)
                        & (schema.Unit.sync == Sync.DRIFTED.value),
                    )
                    .group_by(schema.Project.slug, schema.Environment.name)
                    .order_by(schema.Project.slug, schema.Environment.name)
                ):
                    drifted.add_metric([slug, env], n)
        except Exception as exc:  # a scrape reports the store down, never fails
            log.warning("metrics: the state store did not answer", extra={"reason": str(exc)})
            up.add_metric([], 0)
            yield up
            yield fetches
            yield calls
            return
        up.add_metric([], 1)
        yield from (up, projects, changesets, deployments, approvals, failed, outbox, drifted)
        yield from (fetches, calls)


def _by_environment(model: Any, *columns: Any) -> Any:
    """``SELECT slug, environment, *columns, count(*)`` of ``model``'s rows, grouped."""
    return (
        select(schema.Project.slug, schema.Environment.name, *columns, func.count())
        .select_from(model)
        .join(schema.Environment, schema.Environment.id == model.environment_id)
        .join(schema.Project, schema.Project.id == schema.Environment.project_id)
        .group_by(schema.Project.slug, schema.Environment.name, *columns)
    )


def _latest_states(session: Session) -> list[tuple[str, str, str, str | None]]:
    """(project, environment, unit, state of its latest deployment) for every unit."""
    latest = (
        select(func.max(schema.Deployment.id)).group_by(schema.Deployment.unit_id).scalar_subquery()
    )
    rows = session.execute(
        select(schema.Project.slug, schema.Environment.name, schema.Unit.name, schema.Unit.id)
        .join(schema.Environment, schema.Environment.id == schema.Unit.environment_id)
        .join(schema.Project, schema.Project.id == schema.Unit.project_id)
        .where(schema.Unit.status != "removed")
    ).all()
    states = dict(
        session.execute(
            select(schema.Deployment.unit_id, schema.Deployment.state).where(
                schema.Deployment.id.in_(latest)
            )
        ).all()
    )
    return [(slug, env, name, states.get(unit_id)) for slug, env, name, unit_id in rows]
