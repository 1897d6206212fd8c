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
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import MetaData, select

from notifiers import outbox
from reconciler import bootstrap
from reconciler.admin import secrets as secret_rows
from reconciler.cli import common
from reconciler.clock import FakeClock
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.web.app import create_app
from tests.plugins.git import GitHttpServer, GitRepo, free_port
from tests.plugins.nebula import DIGEST_A, DIGEST_B, DIGEST_C, Nebula, image
from tests.plugins.slack import CHANNEL_ID, SlackServer, signed_headers, slack_interaction
from tests.security.world import (
    Canaries,
    Operator,
    Outputs,
    recording_logs,
)
from tests.web.world import AppServer

API_GOOD = image("api", DIGEST_A)
API_NEXT = image("api", DIGEST_B)
API_LATER = image("api", DIGEST_C)
API_BROKEN = image("api", "sha256:" + "e" * 64)
FAULTS_TOML = f'[images."{API_BROKEN}"]\nfail = "image-pull"\n'
PUBLIC_URL = "https://nebula.example.com"
# Tables whose job is to hold secret values: the encrypted secrets, and the simulated
# cluster's objects (its Kubernetes Secrets carry the values, as a real cluster's do).
SECRET_HOLDING_TABLES = {"secrets", "simulated_objects"}


def shop_toml(api_image: str = API_GOOD, level: str = "info") -> str:
    return f'''
[project]
name = "Shop"

[environments.staging]

[environments.production]
protected = true

[databases.db]

[services.api]
image = "{api_image}"

[services.api.processes.web]
type = "http"
port = 8080

[services.api.variables]
LOG_LEVEL = "{level}"
DATABASE_URL = "${{{{ db.DATABASE_URL }}}}"
PGPASSWORD = "${{{{ db.PGPASSWORD }}}}"
STRIPE_KEY = "${{{{ secret.STRIPE_KEY }}}}"
'''


def blog_toml(level: str = "info") -> str:
    return f'''
[environments.staging]

[services.web]
image = "{image("blog")}"

[services.web.processes.main]
type = "http"
port = 8000

[services.web.variables]
LOG_LEVEL = "{level}"
'''


@dataclass
class Recorded:
    canaries: Canaries
    outputs: Outputs
    store_dump: list[tuple[str, str]] = field(default_factory=list)  # (table.column#id, text)
    api_token_rows: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)
    slack_calls: int = 0
    pages: int = 0
    api_documents: int = 0
    serve_polled: bool = False
    projects: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug -> project JSON


class Installation:
    """The servers and the store the flow runs against."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.canaries = Canaries()
        self.outputs = Outputs()
        self.state = tmp / "state"
        self.faults = tmp / "faults.toml"
        self.faults.write_text(FAULTS_TOML, encoding="utf-8")
        self.served = tmp / "served"
        self.served.mkdir()
        # Two git servers: one wants the token from NEBULA_GIT_CREDENTIALS, the other the
        # password written in the project's URL.
        self.git_token_server = GitHttpServer(self.served, token=self.canaries.git_token).start()
        self.git_url_server = GitHttpServer(self.served, token=self.canaries.url_password).start()
        self.shop = GitRepo(self.served / "shop.git", bare=True)
        self.blog = GitRepo(self.served / "blog.git", bare=True)
        self.slack = SlackServer(token=self.canaries.slack_token)
        self.dead_port = free_port()  # nothing listens here

    def close(self) -> None:
        self.slack.stop()
        self.git_token_server.stop()
        self.git_url_server.stop()

    @property
    def shop_url(self) -> str:
        return self.git_token_server.url("shop.git")

    @property
    def blog_url(self) -> str:
        return self.git_url_server.url("blog.git", userinfo=f"deploy:{self.canaries.url_password}")

    @property
    def ghost_url(self) -> str:
        return (
            f"https://deploy:{self.canaries.dead_url_password}@127.0.0.1:{self.dead_port}/ghost.git"
        )

    @property
    def locked_url(self) -> str:
        wrong = self.canaries.wrong_url_password
        return self.git_url_server.url("blog.git", userinfo=f"deploy:{wrong}")

    @property
    def git_credentials(self) -> str:
        return f"127.0.0.1:{self.git_token_server.port}={self.canaries.git_token}"

    def settings(self) -> Settings:
        return Settings(
            database_url=f"sqlite:///{self.state / 'nebula.db'}",
            state_dir=self.state,
            secret_key=self.canaries.secret_key,
            slack_bot_token=self.canaries.slack_token,
            slack_signing_secret=self.canaries.slack_signing_secret,
            slack_api_url=self.slack.base_url,
            slack_channel=CHANNEL_ID,
            public_url=PUBLIC_URL,
            git_credentials=self.git_credentials,
            simulated_delay=timedelta(0),
            simulated_faults=str(self.faults),
        )

    def serve_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEBULA_")}
        env.update(
            NEBULA_DATABASE_URL=f"sqlite:///{self.state / 'nebula.db'}",
            NEBULA_STATE_DIR=str(self.state),
            NEBULA_SECRET_KEY=self.canaries.secret_key,
            NEBULA_SLACK_BOT_TOKEN=self.canaries.slack_token,
            NEBULA_SLACK_SIGNING_SECRET=self.canaries.slack_signing_secret,
            NEBULA_SLACK_API_URL=self.slack.base_url,
            NEBULA_SLACK_CHANNEL=CHANNEL_ID,
            NEBULA_PUBLIC_URL=PUBLIC_URL,
            NEBULA_GIT_CREDENTIALS=self.git_credentials,
            NEBULA_CLUSTER="simulated",
            NEBULA_SIMULATED_DELAY="0s",
            NEBULA_SIMULATED_FAULTS=str(self.faults),
        )
        return env


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
        self.outputs.add("http", f"{method} {path} -> {response.status_code}", _shown(response))
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
        op.json(f"project add blog --repo {inst.blog_url} --interval 1")
        op.run(f"project add ghost --repo {inst.ghost_url} --interval 1")
        op.json(f"project add locked --repo {inst.locked_url} --interval 1")
        for env in ("staging", "production"):
            op.run(f"secret set shop {env} STRIPE_KEY", stdin=c.server_secret)
        op.run("secret set shop staging STRIPE_KEY", stdin=c.server_secret + "\n")
        op.run("secret list shop staging")
        op.json("secret list shop production")
        op.run(f"project set shop webhook_secret {c.webhook_secret}")

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
        self.request("GET", "/metrics")
        self.request("GET", "/healthz")


def _shown(response: httpx.Response) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    return f"{headers}\n\n{response.text}"


def crawl_pages(get: Any) -> int:
    """Follow every same-site link from ``/``; returns how many pages were fetched."""
    seen: set[str] = set()
    queue = ["/"]
    while queue and len(seen) < 400:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        response = get("GET", path)
        if "html" not in response.headers.get("content-type", ""):
            continue
        for link in re.findall(r'(?:href|src)="(/[^"#]*)"', response.text):
            if link not in seen and not link.startswith("/api/docs"):
                queue.append(link)
    return len(seen)


def crawl_api(get: Any) -> int:
    """Every listing of the JSON API and every object in it, by id."""
    count = 0

    def fetch(path: str) -> Any:
        nonlocal count
        count += 1
        response = get("GET", path)
        return response.json() if response.status_code == 200 else {}

    fetch("/openapi.json")
    for p in fetch("/api/v1/projects").get("projects", []):
        fetch(f"/api/v1/projects/{p['slug']}")
        fetch(f"/api/v1/projects/{p['slug']}/status")
        fetch(f"/api/v1/status?project={p['slug']}")
        fetch(f"/api/v1/deployments?project={p['slug']}")
    fetch("/api/v1/status")
    for d in fetch("/api/v1/deployments?limit=5000").get("deployments", []):
        fetch(f"/api/v1/deployments/{d['id']}")
    for cs in fetch("/api/v1/changesets").get("changesets", []):
        fetch(f"/api/v1/changesets/{cs['id']}")
    for a in fetch("/api/v1/approvals").get("approvals", []):
        fetch(f"/api/v1/approvals/{a['id']}")
    return count


# -- the ``nebula serve`` phase -----------------------------------------------------------


def nebula_command() -> list[str]:
    found = shutil.which("nebula") or str(Path(sys.executable).with_name("nebula"))
    if Path(found).exists():
        return [found]
    return [sys.executable, "-c", "from reconciler.cli.main import main; raise SystemExit(main())"]


class Served:
    """``nebula serve --log-level debug`` on the flow's store, stopped with SIGTERM."""

    def __init__(self, inst: Installation) -> None:
        self.inst = inst
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = inst.tmp / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Served:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*nebula_command(), "serve", "--port", str(self.port), "--log-level", "debug"],
                env=self.inst.serve_env(),
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nebula serve exited {self.process.returncode}:\n{self.logs()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            time.sleep(0.1)
        raise RuntimeError(f"nebula serve did not answer within 60 s:\n{self.logs()}")

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def logs(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def serve_phase(inst: Installation, record: Recorded) -> None:
    """A new push, polled and deployed by ``nebula serve``; an approval decided through its
    API; every page and document fetched while it works."""
    inst.shop.commit({"nebula.toml": shop_toml(API_NEXT, "error")}, "Served push")
    inst.blog.commit({"nebula.toml": blog_toml("debug")}, "Served blog push")
    outputs = inst.outputs
    with Served(inst) as served, httpx.Client(base_url=served.url, timeout=10) as http:

        def get(method: str, path: str, **kwargs: Any) -> httpx.Response:
            response = http.request(method, path, **kwargs)
            outputs.add(
                "serve-http", f"{method} {path} -> {response.status_code}", _shown(response)
            )
            return response

        def status(slug: str) -> dict[str, Any]:
            found: dict[str, Any] = get("GET", f"/api/v1/projects/{slug}").json()["project"]
            return found

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            commit = inst.shop.head()
            if status("shop")["commit"] == commit and status("ghost")["blocker"]:
                break
            time.sleep(0.2)
        record.serve_polled = status("shop")["commit"] == inst.shop.head()
        pending = [
            a
            for a in get("GET", "/api/v1/approvals?state=pending").json()["approvals"]
            if a["project"] == "shop"
        ]
        token = inst.canaries.learnt["alice_token"]
        for a in pending:
            get(
                "POST",
                f"/api/v1/approvals/{a['id']}/approve",
                headers={"Authorization": f"Bearer {token}"},
            )
        get("POST", "/api/v1/approvals/1/approve", headers={"Authorization": f"Bearer {token}x"})
        get("POST", "/api/v1/deployments/1/cancel", headers={"Authorization": "Basic Zm9vOmJhcg=="})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            moving = [
                d
                for d in get("GET", "/api/v1/deployments?project=shop").json()["deployments"]
                if d["state"] not in ("healthy", "failed", "cancelled", "superseded", "rejected")
                and d["state"] != "awaiting-approval"
            ]
            if not moving:
                break
            time.sleep(0.2)
        time.sleep(2.5)  # one outbox round (every 2 s) for what the approval changed
        record.pages += crawl_pages(get)
        record.api_documents += crawl_api(get)
        get("GET", "/metrics")
    outputs.add("serve-log", "nebula serve --log-level debug (stdout and stderr)", served.logs())


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
            finally:
                common.reset()
                ctx.db.dispose()
                if ctx.git is not None:
                    ctx.git.close()
        for n, line in enumerate(logs.lines):
            inst.outputs.add("log", f"log record {n}", line)
        serve_phase(inst, record)
        for call in inst.slack.calls:
            inst.outputs.add("slack", f"Slack {call.method}", repr(call.args))
        record.slack_calls = len(inst.slack.calls)
        record.store_dump, record.api_token_rows = dump_store(inst.settings())
        for where, text in record.store_dump:
            inst.outputs.add("store", where, text)
    finally:
        inst.close()
    return record
