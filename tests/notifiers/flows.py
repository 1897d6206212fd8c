"""Driving a whole project from the outside: git pushes, reconcile passes, outbox deliveries."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import httpx
from sqlalchemy import select

from fixtures import loading
from notifiers import outbox
from reconciler import reconciling, views
from reconciler.admin import projects
from reconciler.clock import FakeClock
from reconciler.context import Context
from reconciler.store import schema
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.slack import SlackServer, signed_headers, slack_interaction


def image(service: str, n: int) -> str:
    digest = hashlib.sha256(f"{service}-{n}".encode()).hexdigest()
    return f"registry.example.com/shop/{service}@sha256:{digest}"


def nebula_toml(
    api: int = 1, *, log_level: str = "info", staging: bool = True, auto_deploy: bool = True
) -> str:
    """A shop with a database and an api; production is protected: fixtures/projects/db-and-api."""
    edits = {image("api", 1): image("api", api), 'LOG_LEVEL = "info"': f'LOG_LEVEL = "{log_level}"'}
    if not staging:
        edits["[environments.staging]"] = ""
    if not auto_deploy:
        edits["auto_deploy = true"] = "auto_deploy = false"
    return loading.project("db-and-api", edits)


class Flow:
    def __init__(self, ctx: Context, clock: FakeClock, repo: GitRepo, slack: SlackServer) -> None:
        self.ctx = ctx
        self.clock = clock
        self.repo = repo
        self.slack = slack

    def member(self, name: str, role: str = "admin", slack_id: str | None = None) -> None:
        with self.ctx.db.transaction() as session:
            people.member(session, self.clock, name, role, slack_id)

    def project(self, slug: str = "shop", text: str | None = None) -> None:
        self.push(text or nebula_toml(), "First shop")
        with self.ctx.db.transaction() as session:
            projects.add(session, self.clock, slug, self.repo.url)

    def push(self, text: str, message: str = "Update nebula.toml") -> str:
        return self.repo.commit({"nebula.toml": text}, message)

    def reconcile(self, passes: int = 400) -> None:
        """Reconcile until nothing moves without a person, moving the fake clock on."""
        for _ in range(passes):
            report = reconciling.run_once(self.ctx)
            if not report.busy and not report.moved:
                return
            self.clock.advance(seconds=3)
        raise AssertionError(f"still busy after {passes} passes")

    def deliver(self) -> int:
        return outbox.deliver_due(self.ctx)

    # -- what there is ----------------------------------------------------------------

    def approvals(self) -> list[dict[str, Any]]:
        with self.ctx.db.transaction() as session:
            return [views.approval(a) for a in session.scalars(select(schema.Approval))]

    def approval(self, approval_id: int) -> schema.Approval:
        with self.ctx.db.transaction() as session:
            found = session.get(schema.Approval, approval_id)
            assert found is not None
            return found

    def deployments(self, environment: str | None = None) -> list[dict[str, Any]]:
        with self.ctx.db.transaction() as session:
            rows = session.scalars(select(schema.Deployment).order_by(schema.Deployment.id))
            found = [views.deployment(d) for d in rows]
        return [d for d in found if environment is None or d["environment"] == environment]

    def outbox(self) -> list[schema.OutboxMessage]:
        with self.ctx.db.transaction() as session:
            return list(
                session.scalars(select(schema.OutboxMessage).order_by(schema.OutboxMessage.id))
            )

    def events(self) -> int:
        with self.ctx.db.transaction() as session:
            return len(session.scalars(select(schema.Event.id)).all())

    # -- Slack buttons ----------------------------------------------------------------

    def click(
        self,
        web: httpx.Client,
        user: str,
        action: str,
        approval_id: int | str,
        *,
        timestamp: int | None = None,
    ) -> httpx.Response:
        body = slack_interaction(
            user=user,
            action=action,
            value=str(approval_id),
            response_url=self.slack.response_url(),
        )
        stamp = timestamp if timestamp is not None else int(self.clock.now().timestamp())
        return web.post("/slack/interactions", content=body, headers=signed_headers(body, stamp))


def eventually(check: Any, timeout: float = 5.0) -> Any:
    """Wait for what the endpoint does after answering (its reply, the message update)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.01)
