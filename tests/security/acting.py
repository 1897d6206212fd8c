"""An installation for the API's write endpoints: the shop deployed, members of every role
with API tokens, and the app on loopback. Targets (approvals, deployments) are made fresh
for each request, so every request meets the same situation."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import httpx
from sqlalchemy.orm import Session

from fixtures import loading
from reconciler.admin import principals, projects
from reconciler.core.rights import Grant, Principal
from reconciler.core.states import GrantKind
from reconciler.engine import recording
from reconciler.requests import actions, starting, suspending
from reconciler.store import schema
from reconciler.web.app import create_app
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import DIGEST_A, DIGEST_B, Nebula
from tests.web.world import AppServer

Row = TypeVar("Row", schema.Approval, schema.Deployment)

ROLES = {"alice": "admin", "bob": "member", "olga": "owner", "carol": "admin"}


def shop_toml(digest: str) -> str:
    return loading.project("two-environments", {DIGEST_A: digest})


@dataclass
class Acting:
    nebula: Nebula
    http: httpx.Client
    tokens: dict[str, str] = field(default_factory=dict)

    def headers(self, who: str | None) -> dict[str, str]:
        if who is None:
            return {}
        return {"Authorization": f"Bearer {self.tokens.get(who, who)}"}

    def post(self, path: str, who: str | None, json: object = None) -> httpx.Response:
        return self.http.post(path, headers=self.headers(who), json=json)

    def call(
        self, method: str, path: str, who: str | None, json: object = None, **params: str
    ) -> httpx.Response:
        return self.http.request(method, path, headers=self.headers(who), json=json, params=params)

    # -- fresh targets --------------------------------------------------------------------

    def call_off(self, env: str) -> None:
        """End what earlier requests left open for api in ``env``."""
        with self.nebula.ctx.db.transaction() as session:
            self._call_off_open(session, env)

    def _call_off_open(self, session: Session, env_name: str = "production") -> None:
        """End what an earlier request left open for api (an approved redeploy stays in
        flight): asked again, that same request would be the answer, not a new one."""
        env = projects.environment(session, projects.get(session, "shop"), env_name)
        unit = projects.unit(session, env, "api")
        for open_one in recording.open_for_unit(session, unit.id):
            starting.cancel(session, self.nebula.ctx.clock, open_one, "test")

    def pending_approval(self, requester: str = "bob") -> str:
        """A redeploy of production's api asked by ``requester``: a new pending approval."""
        with self.nebula.ctx.db.transaction() as session:
            self._call_off_open(session)
            who = deploying(session, requester)
            asked = actions.redeploy(session, self.nebula.ctx, "shop", "api", "production", who)
            assert asked.approval is not None and asked.approval.state == "pending"
            return str(asked.approval.id)

    def open_deployment(self) -> str:
        """A deployment nobody has decided yet (awaiting approval in production)."""
        with self.nebula.ctx.db.transaction() as session:
            self._call_off_open(session)
            who = deploying(session, "bob")
            asked = actions.redeploy(session, self.nebula.ctx, "shop", "api", "production", who)
            return str(asked.deployment.id)

    def approval(self, approval_id: str) -> schema.Approval:
        return self._row(schema.Approval, approval_id)

    def deployment(self, deployment_id: str) -> schema.Deployment:
        return self._row(schema.Deployment, deployment_id)

    def _row(self, model: type[Row], row_id: str) -> Row:
        with self.nebula.ctx.db.transaction() as session:
            row = session.get(model, int(row_id))
            assert row is not None
            session.expunge(row)
            return row

    def suspended(self, env: str) -> str | None:
        """Who suspended ``env`` of the shop (None: it is not suspended)."""
        with self.nebula.ctx.db.transaction() as session:
            row = projects.environment(session, projects.get(session, "shop"), env)
            return row.suspended_by

    def suspend(self, env: str) -> None:
        with self.nebula.ctx.db.transaction() as session:
            olga = principals.by_name(session, "olga")
            suspending.suspend(session, self.nebula.ctx, "shop", env, "set up", olga)

    def resume(self, env: str) -> None:
        with self.nebula.ctx.db.transaction() as session:
            olga = principals.by_name(session, "olga")
            suspending.resume(session, self.nebula.ctx, "shop", env, olga)

    def inbox_reads(self, who: str | None) -> int:
        """How many items of their inbox ``who`` has marked read."""
        with self.nebula.ctx.db.transaction() as session:
            return session.query(schema.InboxRead).filter(schema.InboxRead.member == who).count()

    def deployment_count(self) -> int:
        with self.nebula.ctx.db.transaction() as session:
            return session.query(schema.Deployment).count()


def deploying(session: Session, name: str) -> Principal:
    """``name`` as if granted deploy in the shop's production (to set a situation up)."""
    found = principals.by_name(session, name)
    granted = (*found.grants, Grant(GrantKind.DEPLOY, "shop", "production"))
    return Principal(found.name, found.role, granted)


def build(nebula: Nebula, repo: GitRepo) -> Iterator[Acting]:
    """The shop with staging at r-2 (r-1 retired: something to roll back to) and production
    at r-1, then the app serving it."""
    repo.commit({"nebula.toml": shop_toml(DIGEST_A)}, "First")
    nebula.ok(f"project add shop --repo {repo.url}")
    tokens = {}
    with nebula.ctx.db.transaction() as session:
        for name, role in ROLES.items():
            people.member(session, nebula.clock, name, role)
            tokens[name] = people.token(session, nebula.clock, name)
    nebula.settle()
    (first,) = [a for a in nebula.approvals() if a["state"] == "pending"]
    nebula.ok(f"approve {first['id']} --as olga")
    repo.commit({"nebula.toml": shop_toml(DIGEST_B)}, "Second")
    nebula.settle()
    for approval in nebula.approvals():
        if approval["state"] == "pending":
            nebula.ok(f"reject {approval['id']} --as olga")
    staging = nebula.unit("staging", "api")
    assert staging["active_release"] == "r-2", staging
    with (
        AppServer(create_app(nebula.ctx)) as app,
        httpx.Client(base_url=app.url, timeout=10) as http,
    ):
        yield Acting(nebula, http, tokens)
