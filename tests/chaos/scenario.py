"""The chaos run: pushes, approvals, SIGKILLed replicas, a PostgreSQL restart and a flaky
Kubernetes API, all from one seeded RNG, then a quiet period with every replica up.

The driver acts only as people and infrastructure would: it commits to the repositories
(and sometimes sends the push notification), decides approvals through the API with an
admin's token, kills and starts processes, restarts the database and makes the API server
fail requests. It reads the store directly only to know when the quiet period is over.
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import create_engine, func, select

from reconciler import bootstrap, settings
from reconciler.admin import projects as project_rows
from reconciler.core.states import ApprovalState, DeploymentState
from reconciler.store import schema
from tests.chaos import projects
from tests.chaos.replicas import Replicas, get, post
from tests.infra.faultproxy import FaultProxy, Rule
from tests.infra.postgres import PostgresServer
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.slack import Fault, SlackServer

OPEN_STATES = [
    s.value for s in DeploymentState if not s.is_final and s.value != "awaiting-approval"
]


@dataclass(frozen=True)
class Plan:
    seed: int
    projects: int = 20
    kube_projects: int = 0  # the first N projects deploy to Kubernetes through the proxy
    pushes: int = 40
    chaos_seconds: float = 100.0
    quiet_timeout: float = 150.0  # includes the approvals left open expiring (30 s)
    kill_every: tuple[float, float] = (4.0, 9.0)
    restart_after: tuple[float, float] = (0.5, 3.0)
    new_identity: float = 0.25  # a restart under a new replica id: leases must expire first
    approve: float = 0.75
    reject: float = 0.1  # the rest wait, and expire after NEBULA_APPROVAL_TTL
    webhook: float = 0.5  # pushes also announced by a push notification
    kube_failure: float = 0.08  # the fraction of API requests answered 500
    kube_hang: float = 0.01  # ... or left unanswered, then cut
    slack_faults: int = 6  # Slack calls failed (500, or posted and the answer lost)


@dataclass
class Project:
    slug: str
    repo: GitRepo
    kube: bool
    version: projects.Version = field(default_factory=projects.Version)
    pushes: int = 0


class RandomFaults(Rule):
    """A fault proxy rule that answers a random fraction of the requests it matches."""

    def __init__(
        self, rng: random.Random, fraction: float, status: int | None, seconds: float = 1.5
    ) -> None:
        super().__init__("*", re.compile(r"^/api"), status, None, seconds=seconds)
        self.rng = rng
        self.fraction = fraction
        self.lock = threading.Lock()

    def wants(self, method: str, target: str) -> bool:
        if self.path.search(target) is None or "watch=" in target:
            return False
        with self.lock:
            return self.rng.random() < self.fraction


@dataclass
class Log:
    """What the driver did, for the report."""

    seed: int
    actions: Counter[str] = field(default_factory=Counter)
    timeline: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def note(self, what: str, detail: str = "") -> None:
        self.actions[what] += 1
        self.timeline.append(f"{time.monotonic() - self.started:7.2f}s {what} {detail}".rstrip())


def prepare_store(env: dict[str, str]) -> str:
    """The store the replicas will share, with alice (admin) who decides approvals through the
    API; returns her token. Pushes are requested by the project, so she may approve them."""
    ctx = bootstrap.open_context(settings.load(environ=env), git=False)
    try:
        with ctx.db.transaction() as session:
            people.member(session, ctx.clock, "alice", "admin")
            token = people.token(session, ctx.clock, "alice")
    finally:
        ctx.db.dispose()
    return token


def register(
    env: dict[str, str], items: list[Project], contexts: dict[str, str], interval: int
) -> None:
    """The projects, polled every ``interval`` seconds; the Kubernetes ones with a kubeconfig
    context per environment."""
    ctx = bootstrap.open_context(settings.load(environ=env), git=False)
    try:
        with ctx.db.transaction() as session:
            for item in items:
                row = project_rows.add(
                    session,
                    ctx.clock,
                    item.slug,
                    item.repo.git_url,
                    interval=timedelta(seconds=interval),
                )
                if item.kube:
                    session.flush()
                    for name, context in contexts.items():
                        project_rows.set_value(session, ctx.vault, row, f"cluster.{name}", context)
    finally:
        ctx.db.dispose()


class Scenario:
    """The driver: one seeded RNG decides what happens and when (the seed replays the same
    decisions; process timing still differs from run to run)."""

    def __init__(
        self,
        plan: Plan,
        database_url: str,
        replicas: Replicas,
        items: list[Project],
        token: str,
        slack: SlackServer,
        postgres: PostgresServer,
        proxy: FaultProxy | None,
    ) -> None:
        self.plan = plan
        self.rng = random.Random(plan.seed)
        self.replicas = replicas
        self.items = items
        self.token = token
        self.slack = slack
        self.postgres = postgres
        self.proxy = proxy
        self.log = Log(plan.seed)
        self.engine = create_engine(database_url, pool_pre_ping=True)
        self.decided: set[str] = set()
        self.kube_rules: list[RandomFaults] = []

    # -- the chaos -----------------------------------------------------------------------------

    def run_chaos(self) -> None:
        plan, rng = self.plan, self.rng
        start = time.monotonic()
        end = start + plan.chaos_seconds
        push_at = sorted(
            start + rng.uniform(0, plan.chaos_seconds * 0.85) for _ in range(plan.pushes)
        )
        next_kill = start + rng.uniform(*plan.kill_every)
        pg_restart_at: float | None = start + plan.chaos_seconds * rng.uniform(0.4, 0.6)
        slack_at = sorted(
            start + rng.uniform(0, plan.chaos_seconds * 0.8) for _ in range(plan.slack_faults)
        )
        next_approvals = start + 1.0
        self._kube_faults(on=True)
        while (now := time.monotonic()) < end:
            while push_at and push_at[0] <= now:
                push_at.pop(0)
                self.push(rng.choice(self.items))
            if now >= next_kill:
                restart_after = rng.uniform(*plan.restart_after)
                new_identity = rng.random() < plan.new_identity
                victim = self.replicas.kill_one(restart_after, new_identity=new_identity)
                if victim is not None:
                    self.log.note(
                        "kill",
                        f"{victim} (back in {restart_after:.1f}s"
                        f"{' under a new id' if new_identity else ''})",
                    )
                next_kill = now + rng.uniform(*plan.kill_every)
            if pg_restart_at is not None and now >= pg_restart_at:
                pg_restart_at = None
                mode = rng.choice(["fast", "immediate"])
                self.postgres.restart(mode=mode)
                self.log.note("postgres restart", mode)
            while slack_at and slack_at[0] <= now:
                slack_at.pop(0)
                self._slack_fault()
            if now >= next_approvals:
                self.decide_some()
                next_approvals = now + rng.uniform(0.5, 1.5)
            time.sleep(0.05)
        self._kube_faults(on=False)
        self.slack.restore()

    def push(self, item: Project) -> None:
        item.version = projects.next_version(item.version, self.rng)
        item.repo.commit(
            {"nebula.toml": projects.toml(item.slug, item.version)}, f"push {item.pushes}"
        )
        item.pushes += 1
        self.log.note("push", f"{item.slug} {item.version}")
        if self.rng.random() < self.plan.webhook:
            self.notify(item.slug)

    def notify(self, slug: str) -> None:
        url = self.replicas.any_url()
        if url is None:
            return
        delivery = str(uuid.uuid4())
        for _ in range(2 if self.rng.random() < 0.2 else 1):  # now and then, a redelivery
            try:
                post(
                    url,
                    f"/hooks/git/{slug}",
                    headers={"X-GitHub-Delivery": delivery},
                    content=b"{}",
                )
                self.log.note("webhook")
            except httpx.HTTPError:
                self.log.note("webhook lost")

    def decide_some(self) -> None:
        """Approve most pending approvals, reject a few, leave the rest to expire."""
        url = self.replicas.any_url()
        if url is None:
            return
        try:
            response = get(url, "/api/v1/approvals?state=pending")
            response.raise_for_status()
            pending = response.json()["approvals"]
        except (httpx.HTTPError, ValueError):
            self.log.note("approvals unreadable")
            return
        for approval in pending:
            if approval["id"] in self.decided:
                continue
            self.decided.add(approval["id"])
            roll = self.rng.random()
            if roll >= self.plan.approve + self.plan.reject:
                self.log.note("left to expire", approval["id"])
                continue
            verb = "approve" if roll < self.plan.approve else "reject"
            try:
                answer = post(url, f"/api/v1/approvals/{approval['id']}/{verb}", self.token)
            except httpx.HTTPError:
                self.decided.discard(approval["id"])  # the replica died meanwhile: try again
                self.log.note(f"{verb} lost")
                continue
            # 409: it was cancelled meanwhile (a newer approval of the same service ended it).
            self.log.note(f"{verb} {answer.status_code}", approval["id"])
            if answer.status_code >= 500:
                self.decided.discard(approval["id"])

    def _slack_fault(self) -> None:
        fault = self.rng.choice(
            [
                Fault(status=500),
                Fault(status=200, drop_after=True),
                Fault(status=429, retry_after=1),
            ]
        )
        self.slack.fail("chat.postMessage", fault)
        self.log.note("slack fault", f"{fault.status}{' dropped' if fault.drop_after else ''}")

    def _kube_faults(self, *, on: bool) -> None:
        if self.proxy is None:
            return
        if on:
            failing = RandomFaults(random.Random(self.rng.random()), self.plan.kube_failure, 500)
            hanging = RandomFaults(random.Random(self.rng.random()), self.plan.kube_hang, None)
            self.kube_rules = [failing, hanging]
            for rule in self.kube_rules:
                self.proxy._add(rule)
        else:
            self.proxy.clear()
            self.log.actions["kube requests failed"] = sum(r.hits for r in self.kube_rules[:1])
            self.log.actions["kube requests hung"] = sum(r.hits for r in self.kube_rules[1:])

    # -- the quiet period ----------------------------------------------------------------------

    def settle(self) -> dict[str, Any]:
        """Every replica up, no faults: wait until every push is polled, nothing is in flight,
        every approval left open has expired and every notice is out. Returns what was still
        open if it never got there.

        An approval still pending counts as open work: it expires at a later tick, whose
        notices would otherwise be written just before the replicas stop and never sent (CI
        failed once that way, with four ``approval-update`` notices left in the outbox)."""
        self.replicas.wait_restarts()
        # A last commit to every project that changes nothing but a comment: each must still
        # be polled, whichever replica held its poll lease when it was killed.
        for item in self.items:
            text = projects.toml(item.slug, item.version) + "# quiet now\n"
            item.repo.commit({"nebula.toml": text}, "A comment")
        self.log.note("comment pushed everywhere")
        deadline = time.monotonic() + self.plan.quiet_timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.open_work()
            if not any(last.values()):
                self.log.note("quiet")
                return {}
            time.sleep(0.5)
        return last

    def open_work(self) -> dict[str, Any]:
        heads = {i.slug: i.repo.head() for i in self.items}
        try:
            with self.engine.connect() as conn:
                polled = dict(
                    conn.execute(select(schema.Project.slug, schema.Project.last_commit)).all()
                )
                in_flight = conn.execute(
                    select(
                        schema.Deployment.id,
                        schema.Deployment.state,
                        schema.Deployment.blocker,
                        schema.Deployment.lease_owner,
                    ).where(schema.Deployment.state.in_(OPEN_STATES))
                ).all()
                cleanup = conn.execute(
                    select(func.count())
                    .select_from(schema.Deployment)
                    .where(schema.Deployment.stage_marker == "cleanup")
                ).scalar_one()
                pending = conn.execute(
                    select(func.count())
                    .select_from(schema.Approval)
                    .where(schema.Approval.state == ApprovalState.PENDING)
                ).scalar_one()
                undelivered = conn.execute(
                    select(func.count())
                    .select_from(schema.OutboxMessage)
                    .where(schema.OutboxMessage.delivered_at.is_(None))
                ).scalar_one()
        except Exception as exc:  # the database restarting: ask again
            return {"store": str(exc).splitlines()[0]}
        return {
            "not polled": sorted(s for s, h in heads.items() if polled.get(s) != h),
            "in flight": [tuple(r) for r in in_flight][:10],
            "cleanup": cleanup,
            "pending approvals": pending,
            "undelivered": undelivered,
        }

    def close(self) -> None:
        self.engine.dispose()
