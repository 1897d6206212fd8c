"""``nebula serve`` end to end: a process on a free port, a real git repository, the simulated
cluster; commits are pushed and the API, the page and the logs are watched as a user would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.store import schema
from reconciler.store.database import Database
from reconciler.web.hooks import signature
from tests.plugins.git import GitRepo, GitRepoFactory
from tests.web.world import (
    API_BROKEN,
    API_NEXT,
    CANARY,
    SLUG,
    ServeProcess,
    api,
    eventually,
    prepare_serve,
    set_webhook_secret,
    shop_toml,
)


@dataclass
class Served:
    server: ServeProcess
    repo: GitRepo
    admin_token: str

    def status(self) -> dict[str, Any]:
        return api(self.server.url, f"/api/v1/status?project={SLUG}")["projects"][0]  # type: ignore[no-any-return]

    def unit(self, env: str, name: str) -> dict[str, Any]:
        for e in self.status()["environments"]:
            if e["name"] == env:
                for u in e["services"]:
                    if u["name"] == name:
                        return u  # type: ignore[no-any-return]
        return {}

    def push(self, text: str, message: str) -> str:
        return self.repo.commit({"nebula.toml": text}, message)


@pytest.fixture
def served(tmp_path: Path, git_repos: GitRepoFactory) -> Iterator[Served]:
    repo = git_repos.local("shop")
    server, token = prepare_serve(tmp_path, repo, interval=1)
    server.start()
    yield Served(server, repo, token)
    server.kill()


def _deployed(served: Served, env: str, release: str) -> bool:
    units = [u for e in served.status()["environments"] if e["name"] == env for u in e["services"]]
    return bool(units) and all(
        u["active_release"] == release and u["deployment"] is None for u in units
    )


def test_pushes_flow_through_to_the_api_and_the_page(served: Served) -> None:
    url = served.server.url
    eventually(lambda: _deployed(served, "staging", "r-1"), what="staging's first deploy healthy")
    [approval] = eventually(
        lambda: api(url, "/api/v1/approvals?state=pending")["approvals"], what="an approval waiting"
    )
    assert "Waiting for approval" in httpx.get(f"{url}/projects/{SLUG}").text

    decided = httpx.post(
        f"{url}/api/v1/approvals/{approval['id']}/approve",
        headers={"Authorization": f"Bearer {served.admin_token}"},
    )
    assert decided.status_code == 200 and decided.json()["approval"]["decided_by"] == "alice"
    eventually(lambda: _deployed(served, "production", "r-1"), what="production healthy")

    served.push(shop_toml(api_image=API_NEXT, production=False), "New api image")
    eventually(
        lambda: served.unit("staging", "api").get("active_release") == "r-2", what="api r-2 healthy"
    )
    assert served.unit("staging", "api")["image"] == API_NEXT

    served.push(shop_toml(api_image=API_BROKEN, production=False), "Broken image")
    failed = eventually(
        lambda: (
            (d := served.unit("staging", "api").get("deployment")) and d["state"] == "failed" and d
        ),
        what="the broken image's deployment failed",
    )
    assert failed["blocker"] == "image-pull"
    assert "r-2 keeps serving" in failed["message"]
    page = httpx.get(f"{url}/projects/{SLUG}").text
    assert "image-pull:" in page and "r-2 keeps serving" in page
    assert CANARY not in page


def test_sigterm_stops_within_10_s_and_the_logs_are_clean_json(served: Served) -> None:
    eventually(lambda: _deployed(served, "staging", "r-1"), what="staging healthy")
    httpx.get(
        f"{served.server.url}/api/v1/deployments",
        headers={"Authorization": f"Bearer {served.admin_token}"},
    )

    code, seconds = served.server.stop()

    assert code == 0
    assert seconds < 10
    lines = [json.loads(line) for line in served.server.logs().splitlines() if line.startswith("{")]
    events = [line["event"] for line in lines]
    assert "serving" in events and "scheduler started" in events and "stopped" in events
    assert all(line["level"] in ("debug", "info", "warning", "error") for line in lines)
    logs = served.server.logs()
    assert CANARY not in logs
    assert served.admin_token not in logs


def test_a_push_notification_polls_at_once(tmp_path: Path, git_repos: GitRepoFactory) -> None:
    repo = git_repos.local("shop")
    server, _ = prepare_serve(tmp_path, repo, interval=3600)  # only the first poll, then an hour
    set_webhook_secret(server.env, "s3cret-hook")
    served = Served(server.start(), repo, "")
    try:
        eventually(lambda: _deployed(served, "staging", "r-1"), what="staging healthy")
        served.push(shop_toml(api_image=API_NEXT), "Pushed with a notification")
        body = b'{"ref": "refs/heads/main"}'
        hook = f"{server.url}/hooks/git/{SLUG}"
        headers = {
            "X-GitHub-Delivery": "push-1",
            "X-Hub-Signature-256": signature("s3cret-hook", body),
        }

        bad = httpx.post(
            hook, content=body, headers={**headers, "X-Hub-Signature-256": "sha256=00"}
        )
        accepted = httpx.post(hook, content=body, headers=headers)

        assert bad.status_code == 401
        assert accepted.status_code == 202
        eventually(
            lambda: served.unit("staging", "api").get("active_release") == "r-2",
            timeout=15,
            what="the pushed image deployed long before the hour",
        )
        replay = httpx.post(hook, content=body, headers=headers)
        assert (replay.status_code, replay.json()["status"]) == (200, "duplicate")
    finally:
        server.kill()


def test_a_restart_mid_deploy_resumes_where_it_stopped(
    tmp_path: Path, git_repos: GitRepoFactory
) -> None:
    repo = git_repos.local("shop")
    server, _ = prepare_serve(tmp_path, repo, interval=1, simulated_delay="1s")
    server.start()
    try:
        eventually(
            lambda: any(
                (d := u["deployment"]) and d["state"] in ("starting", "qualifying")
                for e in api(server.url, f"/api/v1/status?project={SLUG}")["projects"][0][
                    "environments"
                ]
                for u in e["services"]
            ),
            what="a deployment in flight",
        )
        code, seconds = server.stop()
        assert (code, seconds < 10) == (0, True)
        store = Database(f"sqlite:///{tmp_path / 'state' / 'nebula.db'}", migrate=False)
        with store.transaction() as session:
            assert session.query(schema.Lease).count() == 0
            assert (
                session.query(schema.Deployment)
                .filter(schema.Deployment.lease_owner.is_not(None))
                .count()
                == 0
            )
            assert (
                session.query(schema.Deployment)
                .filter(schema.Deployment.finished_at.is_(None))
                .count()
                > 0
            )
        store.dispose()

        server.start()
        served = Served(server, repo, "")
        eventually(
            lambda: _deployed(served, "staging", "r-1"),
            timeout=40,
            what="staging healthy after the restart",
        )
    finally:
        server.kill()
