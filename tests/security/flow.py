"""A real flow with a canary of every kind seeded, recording everything anyone can see.

Two phases on one store. In-process (fake clock, the real CLI in-process, the app on loopback):
members and API tokens, three projects (one over smart HTTP with a token from
``NEBULA_GIT_CREDENTIALS``, one with the password in its URL, one unreachable over https
with credentials in its URL, one whose URL carries a wrong password), server-side secrets,
pushes, deploys, a failure, approvals from Slack, the API and the CLI, rollback, promote,
redeploy, cancel, ``nebula render``, every listing in text and JSON, and the pages and the API.
Then ``nebula serve --log-level debug`` as a process on the same store, with the same
secrets in its environment: it polls, deploys, posts to Slack and serves while every page
and API document is fetched. Its log is recorded as the operator would read it.

The installation and the ``nebula.toml`` texts live in ``installation.py``, the served phase
in ``served.py``, and the crawl both phases share in ``crawling.py``; this module holds the
in-process phase, the store dump, and ``run``, which drives the whole flow.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import MetaData, select

from notifiers import outbox
from reconciler import bootstrap
from reconciler.admin import secrets as secret_rows
from reconciler.cli import local
from reconciler.clock import FakeClock
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.web.app import create_app
from tests.plugins.nebula import Nebula
from tests.plugins.slack import signed_headers, slack_interaction
from tests.security.crawling import crawl_api, crawl_pages, shown
from tests.security.installation import (
    API_BROKEN,
    API_LATER,
    API_NEXT,
    Installation,
    Recorded,
    blog_toml,
    shop_toml,
)
from tests.security.served import serve_phase
from tests.security.world import Operator, recording_logs
from tests.web.world import AppServer

# Tables whose job is to hold secret values (encrypted). The simulated cluster's objects are
# dumped with the rest: its Secrets keep their values encrypted too.
SECRET_HOLDING_TABLES = {"secrets"}


# -- the in-process phase ----------------------------------------------------------------


class InProcess:
    def __init__(self, inst: Installation, nebula: Nebula, http: httpx.Client) -> None:
        self.inst = inst
        self.nebula = nebula
        self.op = Operator(nebula, inst.outputs)
        self.http = http
        self.outputs = inst.outputs
        self.canaries = inst.canaries
        self.projects: dict[str, dict[str, Any]] = {}
        self.pages = 0
        self.documents = 0

    # what a person does ---------------------------------------------------------------

    def settle(self) -> None:
        self.nebula.settle(step=5)
        self.deliver()

    def deliver(self) -> None:
        for _ in range(5):
            if outbox.deliver_due(self.nebula.ctx) == 0:
                return
            self.nebula.clock.advance(seconds=1)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.http.request(method, path, **kwargs)
        self.outputs.add("http", f"{method} {path} -> {response.status_code}", shown(response))
        return response

    def api(self, method: str, path: str, who: str | None, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.canaries.learnt[who]}"} if who else {}
        return self.request(method, path, headers=headers, **kwargs)

    def click(self, user: str, action: str, approval_id: str) -> httpx.Response:
        body = slack_interaction(
            user=user,
            action=action,
            value=approval_id,
            response_url=self.inst.slack.response_url(),
        )
        stamp = int(self.nebula.clock.now().timestamp())
        headers = signed_headers(body, stamp, secret=self.canaries.slack_signing_secret)
        response = self.request("POST", "/slack/interactions", content=body, headers=headers)
        return response

    def pending(self, project: str, environment: str) -> list[dict[str, Any]]:
        return [
            a
            for a in self.op.json("approvals")["approvals"]
            if a["project"] == project
            and a["environment"] == environment
            and a["state"] == "pending"
        ]

    def wait_decided(self, approval_id: str) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with self.nebula.ctx.db.transaction() as session:
                row = session.get(schema.Approval, int(approval_id))
                if row is not None and row.state != "pending":
                    return
            time.sleep(0.02)
        raise AssertionError(f"approval {approval_id} was not decided from Slack")

    # the flow -------------------------------------------------------------------------

    def run(self) -> None:
        op, inst, c = self.op, self.inst, self.canaries
        for name, role, slack_id in (
            ("alice", "admin", "UALICE"),
            ("bob", "member", "UBOB"),
            ("olga", "owner", "UOLGA"),
        ):
            op.run(f"member add {name} --role {role} --slack-id {slack_id}")
        alice = op.run("token create --as alice")
        c.learn("alice_token", alice.out.strip())
        c.learn("bob_token", op.json("token create --as bob")["token"])
        c.learn("olga_token", op.json("token create --as olga")["token"])

        inst.shop.commit({"nebula.toml": shop_toml()}, "First shop")
        inst.blog.commit({"nebula.toml": blog_toml()}, "First blog")
        op.run(f"project add shop --repo {inst.shop_url} --interval 1")
        op.run("grant add bob deploy --project shop --as olga")  # bob deploys in production too
        op.json(f"project add blog --repo {inst.blog_url} --interval 1")
        op.run(f"project add ghost --repo {inst.ghost_url} --interval 1 --no-check")
        op.json(f"project add locked --repo {inst.locked_url} --interval 1 --no-check")
        for env in ("staging", "production"):
            op.run(f"secret set shop {env} STRIPE_KEY", stdin=c.server_secret)
        op.run("secret set shop staging STRIPE_KEY", stdin=c.server_secret + "\n")
        op.run("secret list shop staging")
        op.json("secret list shop production")
        op.run("project set shop webhook_secret", stdin=c.webhook_secret + "\n")

        op.json("reconcile --until-idle")
        self.settle()
        with self.nebula.ctx.db.transaction() as session:
            project = session.scalars(
                select(schema.Project).where(schema.Project.slug == "shop")
            ).one()
            values = secret_rows.values(session, self.nebula.ctx.vault, project.id, "staging")
            password = values["nebula.database-password.db"]
        c.learn("database_password", password)

        # Production's first deploy is approved from Slack by the owner; a member's click is
        # refused with an ephemeral message.
        (first,) = self.pending("shop", "production")
        assert self.click("UBOB", "nebula_approve", first["id"]).status_code == 200
        assert self.click("UOLGA", "nebula_approve", first["id"]).status_code == 200
        self.wait_decided(first["id"])
        self.settle()

        # A failure in staging, then a good image again.
        inst.shop.commit({"nebula.toml": shop_toml(API_BROKEN)}, "Broken api image")
        op.run("reconcile")
        self.settle()
        inst.shop.commit({"nebula.toml": shop_toml(API_NEXT, "debug")}, "Next api image")
        op.run("reconcile --project shop")
        self.settle()

        # Decisions through the API, then rollback, promote, redeploy, cancel.
        (pending,) = self.pending("shop", "production")
        assert (
            self.api("POST", f"/api/v1/approvals/{pending['id']}/approve", None).status_code == 401
        )
        assert (
            self.api("POST", f"/api/v1/approvals/{pending['id']}/approve", "bob_token").status_code
            == 403
        )
        assert (
            self.api(
                "POST", f"/api/v1/approvals/{pending['id']}/approve", "alice_token"
            ).status_code
            == 200
        )
        self.settle()
        assert (
            self.api(
                "POST",
                "/api/v1/projects/shop/services/api/rollback",
                "bob_token",
                json={"environment": "staging"},
            ).status_code
            == 200
        )
        self.settle()
        response = self.api(
            "POST",
            "/api/v1/projects/shop/services/api/promote",
            "bob_token",
            json={"from": "staging", "to": "production"},
        )
        assert response.status_code == 200, response.text
        promoted = response.json()["approval"]["id"]
        op.run(f"reject {promoted} --as olga --reason 'not today'")
        op.json("redeploy shop api --env production --as bob")
        (redeploy,) = self.pending("shop", "production")
        op.run(f"approve {redeploy['id']} --as olga")
        self.settle()
        op.json("redeploy shop api --env staging --as bob")
        started = [d for d in op.json("deployments shop")["deployments"] if d["state"] == "pending"]
        assert started, "the redeploy should be pending"
        assert (
            self.api(
                "POST", f"/api/v1/deployments/{started[-1]['id']}/cancel", "alice_token"
            ).status_code
            == 200
        )
        op.run("redeploy shop api --env production --as alice")
        op.run("redeploy shop db --env production --as olga")
        self.settle()
        (mine,) = [a for a in self.pending("shop", "production") if a["requested_by"] == "alice"]
        assert (
            self.api("POST", f"/api/v1/approvals/{mine['id']}/approve", "alice_token").status_code
            == 403
        )
        assert (
            self.api(
                "POST",
                f"/api/v1/approvals/{mine['id']}/reject",
                "olga_token",
                json={"reason": "no"},
            ).status_code
            == 200
        )
        inst.shop.commit({"nebula.toml": shop_toml(API_LATER, "warn")}, "Later api image")
        op.run("reconcile")
        self.settle()

        self.listings()
        self.render()
        self.failures()
        self.crawl()
        self.deliver()

    def listings(self) -> None:
        op = self.op
        for command in (
            "status",
            "status shop",
            "status shop --env production",
            "status ghost",
            "deployments",
            "deployments shop --env staging",
            "changesets",
            "changesets shop",
            "approvals",
            "project list",
            "member list",
            "policy list",
            "freeze list",
        ):
            op.run(command)
            op.run(f"{command} --json")
        for d in op.json("deployments")["deployments"]:
            op.run(f"deployment show {d['id']}")
            op.run(f"deployment show {d['id']} --json")
        for cs in op.json("changesets")["changesets"]:
            op.run(f"changeset show {cs['id']}")
            op.run(f"changeset show {cs['id']} --json")
        for p in op.json("project list")["projects"]:
            self.projects[p["slug"]] = p

    def render(self) -> None:
        path = self.inst.tmp / "nebula.toml"
        path.write_text(shop_toml(API_LATER), encoding="utf-8")
        out = self.inst.tmp / "rendered"
        for env in ("staging", "production"):
            self.op.run(f"render {path} --env {env}")
            self.op.run(f"render {path} --env {env} --service db")
        self.op.run(f"render {path} --env production --out {out}")
        for file in sorted(out.rglob("*")):
            if file.is_file():
                self.outputs.add("render", str(file.relative_to(out)), file.read_text())
        self.op.run(f"validate {path}")

    def failures(self) -> None:
        """Requests that fail, and git remotes that cannot be used, as a person meets them."""
        op, c = self.op, self.canaries
        op.run("reconcile --project ghost")
        op.run("reconcile --project locked --json")
        op.run("status ghost --json")
        op.run(
            f"project add ghost --repo https://deploy:{c.dead_url_password}@127.0.0.1/x", ok=False
        )
        op.run("secret set nowhere staging STRIPE_KEY", stdin=c.server_secret, ok=False)
        op.run("secret set shop staging bad-name", stdin=c.server_secret, ok=False)
        op.run("secret set shop staging EMPTY", stdin="", ok=False)
        op.run("approve 99999 --as alice", ok=False)
        op.run("approve 1 --as bob", ok=False)
        op.run("rollback shop api --env production --to r-99 --as bob", ok=False)
        op.run("project set nowhere repo https://deploy:" + c.dead_url_password + "@h/x", ok=False)
        op.run(f"project set ghost repo {self.inst.ghost_url}")
        op.run("reconcile --project ghost")

    def crawl(self) -> None:
        """Every page reachable from ``/`` and every API document, as the app serves them."""
        pages = crawl_pages(self.request)
        self.pages = pages
        self.documents = crawl_api(self.request)
        for token in ("alice_token", "bob_token", "olga_token"):
            self.api("POST", "/api/v1/approvals/99999/approve", token)
        self.request(
            "POST", "/api/v1/approvals/1/approve", headers={"Authorization": "Bearer nbl_x"}
        )
        self.request(
            "POST", "/hooks/git/shop", content=b"{}", headers={"X-Hub-Signature-256": "sha256=00"}
        )
        # GitLab sends the secret itself: accepted, and never logged or shown back.
        gitlab = {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": self.canaries.webhook_secret}
        self.request("POST", "/hooks/git/shop", content=b'{"ref": "refs/tags/v1"}', headers=gitlab)
        self.request("GET", "/metrics")
        self.request("GET", "/healthz")


# -- the whole flow ---------------------------------------------------------------------------


def dump_store(settings: Settings) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """Every text value in every table (but those meant to hold secrets), and api_tokens."""
    ctx = bootstrap.open_context(settings, git=False)
    try:
        metadata = MetaData()
        metadata.reflect(ctx.db.engine)
        out: list[tuple[str, str]] = []
        with ctx.db.engine.connect() as connection:
            for table in sorted(metadata.tables.values(), key=lambda t: t.name):
                rows = connection.execute(table.select()).mappings().all()
                if table.name == "api_tokens":
                    tokens = [dict(r) for r in rows]
                if table.name in SECRET_HOLDING_TABLES:
                    continue
                for n, row in enumerate(rows):
                    for column, value in row.items():
                        if isinstance(value, bytes):
                            value = value.decode("utf-8", errors="replace")
                        if value is not None:
                            out.append((f"{table.name}.{column}#{n}", str(value)))
        return out, tokens
    finally:
        ctx.db.dispose()


def raw_store(state: Path, moment: str) -> list[tuple[str, bytes]]:
    """The store's files byte for byte (``nebula.db`` and, while it is open, its write-ahead
    log and its index), as someone who copied the directory would have them."""
    return [
        (f"{path.name} @ {moment}", path.read_bytes())
        for path in sorted(state.glob("nebula.db*"))
        if path.is_file()
    ]


def run(tmp: Path) -> Recorded:
    inst = Installation(tmp)
    record = Recorded(inst.canaries, inst.outputs)
    try:
        # Real time minus an hour: the served phase, on the system clock, carries on from here.
        clock = FakeClock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1))
        inst.slack.use_clock(lambda: clock.now().timestamp())
        with recording_logs() as logs:
            ctx = bootstrap.open_context(inst.settings(), clock)
            nebula = Nebula(ctx, clock, tmp)
            try:
                with (
                    AppServer(create_app(ctx)) as app,
                    httpx.Client(base_url=app.url, timeout=10) as http,
                ):
                    flow = InProcess(inst, nebula, http)
                    flow.run()
                    record.pages = flow.pages
                    record.api_documents = flow.documents
                    record.projects = dict(flow.projects)
                    record.raw_files += raw_store(inst.state, "the end of the in-process phase")
            finally:
                local.reset()
                ctx.db.dispose()
                if ctx.git is not None:
                    ctx.git.close()
        for n, line in enumerate(logs.lines):
            inst.outputs.add("log", f"log record {n}", line)
        serve_phase(inst, record)
        for call in inst.slack.calls:
            inst.outputs.add("slack", f"Slack {call.method}", repr(call.args))
        record.slack_calls = len(inst.slack.calls)
        record.raw_files += raw_store(inst.state, "the end")
        record.store_dump, record.api_token_rows = dump_store(inst.settings())
        for where, text in record.store_dump:
            inst.outputs.add("store", where, text)
    finally:
        inst.close()
    return record
