"""Request bodies are bounded before anything reads them (behaviour.md, "Limits (1.1)").

Every POST route has a limit (``web.admission.LIMITS``): a body announced larger is answered
413 at once, a chunked one is answered 413 the moment it passes the limit (it used to be read
whole: a 1.5 GB push notification took a server from 0.5 to 3 GB before its 413). The API's
writes check the token first: without one the answer is 401 and the body is never read (it
was parsed first: 800 MB with no token was 1.55 GB, then a 422). Measured on raw sockets, as
an attacker would send them, and on a ``nebula serve`` process's peak memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.numbers import MIB
from reconciler.web.admission import DEFAULT, LIMITS, limit_for
from reconciler.web.app import create_app
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import nebula_with
from tests.security import uploads
from tests.security.world import app_routes
from tests.web.world import AppServer, ServeProcess, prepare_serve

# Every write route the app serves ("METHOD route"), with a path that reaches it.
WRITES = {
    "POST /hooks/git/{project}": "/hooks/git/shop",
    "POST /slack/interactions": "/slack/interactions",
    "POST /api/v1/approvals/{approval_id}/approve": "/api/v1/approvals/1/approve",
    "POST /api/v1/approvals/{approval_id}/reject": "/api/v1/approvals/1/reject",
    "POST /api/v1/projects/{slug}/services/{service}/rollback": "/api/v1/projects/shop/services/api/rollback",
    "POST /api/v1/projects/{slug}/services/{service}/promote": "/api/v1/projects/shop/services/api/promote",
    "POST /api/v1/projects/{slug}/services/{service}/redeploy": "/api/v1/projects/shop/services/api/redeploy",
    "POST /api/v1/deployments/{deployment_id}/cancel": "/api/v1/deployments/1/cancel",
    "POST /api/v1/projects/{slug}/suspend": "/api/v1/projects/shop/suspend",
    "POST /api/v1/projects/{slug}/resume": "/api/v1/projects/shop/resume",
    "POST /api/v1/changesets/{changeset_id}/apply": "/api/v1/changesets/1/apply",
    "POST /api/v1/changesets/{changeset_id}/discard": "/api/v1/changesets/1/discard",
    "POST /api/v1/projects": "/api/v1/projects",
    "POST /api/v1/projects/{slug}/settings": "/api/v1/projects/shop/settings",
    "DELETE /api/v1/projects/{slug}": "/api/v1/projects/shop",
    "POST /api/v1/reconcile": "/api/v1/reconcile",
    "POST /api/v1/members": "/api/v1/members",
    "PATCH /api/v1/members/{name}": "/api/v1/members/alice",
    "DELETE /api/v1/members/{name}": "/api/v1/members/alice",
    "POST /api/v1/grants": "/api/v1/grants",
    "DELETE /api/v1/grants": "/api/v1/grants",
    "POST /api/v1/tokens": "/api/v1/tokens",
    "DELETE /api/v1/tokens/{token_id}": "/api/v1/tokens/1",
    "PUT /api/v1/policies/{key}": "/api/v1/policies/forbid_self_approval",
    "POST /api/v1/freezes": "/api/v1/freezes",
    "DELETE /api/v1/freezes/{freeze_id}": "/api/v1/freezes/1",
    "POST /api/v1/projects/{slug}/services/{service}/settings": "/api/v1/projects/shop/services/api/settings",
    "PUT /api/v1/projects/{slug}/environments/{env}/secrets/{name}": "/api/v1/projects/shop/environments/staging/secrets/KEY",
    "DELETE /api/v1/projects/{slug}/environments/{env}/secrets/{name}": "/api/v1/projects/shop/environments/staging/secrets/KEY",
    "POST /api/v1/simulated/edit": "/api/v1/simulated/edit",
    "POST /api/v1/simulated/delete": "/api/v1/simulated/delete",
    "POST /api/v1/notify/channels": "/api/v1/notify/channels",
    "DELETE /api/v1/notify/channels/{channel_id}": "/api/v1/notify/channels/1",
    "POST /api/v1/notify/channels/{channel_id}/test": "/api/v1/notify/channels/1/test",
    "POST /api/v1/inbox/read": "/api/v1/inbox/read",
    "POST /api/v1/sso/device": "/api/v1/sso/device",
    "POST /api/v1/sso/authorize": "/api/v1/sso/authorize",
    "POST /api/v1/sso/token": "/api/v1/sso/token",
    "POST /logout": "/logout",
}
# The writes anyone may send without a token: the hooks check their own signature on the
# body; signing in is how one gets a token (the provider's word decides), and signing out
# ends the session its cookie names, if any.
SIGNING_IN = {
    "POST /api/v1/sso/device",
    "POST /api/v1/sso/authorize",
    "POST /api/v1/sso/token",
    "POST /logout",
}
UNAUTHENTICATED = {"POST /hooks/git/{project}", "POST /slack/interactions", *SIGNING_IN}
GOT_AWAY = 8 * MIB  # what sockets and buffers hold on the way once the server has answered


class Server:
    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token

    def headers(self, route: str) -> dict[str, str]:
        """A valid token for an API write (so that only the size can refuse it)."""
        if route in UNAUTHENTICATED:
            return {"Content-Type": "application/json"}
        return {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp: Path = tmp_path_factory.mktemp("bodies")
    for nebula in nebula_with(tmp, slack_signing_secret="signing-secret-for-bodies"):
        nebula.ok("project add shop --repo /srv/shop --no-check")
        with nebula.ctx.db.transaction() as session:
            people.member(session, nebula.clock, "alice", "admin")
            token = people.token(session, nebula.clock, "alice")
        with AppServer(create_app(nebula.ctx)) as app:
            yield Server(app.port, token)


def test_the_table_holds_every_write_route_of_the_app(tmp_path: Path) -> None:
    for nebula in nebula_with(tmp_path):
        routes = app_routes(create_app(nebula.ctx))
        writes = {
            f"{method} {path}"
            for path, methods in routes
            for method in methods - {"GET", "HEAD", "OPTIONS"}
        }
        assert writes == set(WRITES)


def test_the_limits_are_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "25 MiB" in readme and "1 MiB" in readme and "64 KiB" in readme
    assert [limit.size for limit in LIMITS] == [25 * MIB, 1 * MIB, 64 * 1024]
    assert DEFAULT.size == 64 * 1024


@pytest.mark.parametrize("route", list(WRITES))
def test_a_body_announced_over_the_limit_is_refused_before_it_is_sent(
    server: Server, route: str
) -> None:
    method, path = route.split()[0], WRITES[route]
    limit = limit_for(path).size
    headers = server.headers(route)
    answer = uploads.announced(server.port, path, limit + 1, headers, method=method)
    assert answer.status == 413, answer.head
    assert b"connection: close" in answer.head.lower()
    within = uploads.announced(server.port, path, limit, headers, timeout=1, method=method)
    assert within.status == 0, "a body within the limit is waited for (it was not sent)"


@pytest.mark.parametrize("route", list(WRITES))
def test_a_chunked_body_is_refused_the_moment_it_passes_the_limit(
    server: Server, route: str
) -> None:
    method, path = route.split()[0], WRITES[route]
    limit = limit_for(path).size
    answer = uploads.chunked(
        server.port, path, limit + 64 * MIB, server.headers(route), method=method
    )
    assert answer.status == 413, answer.head
    assert limit < answer.sent + uploads.CHUNK <= limit + GOT_AWAY, answer.sent


@pytest.mark.parametrize("route", sorted(set(WRITES) - UNAUTHENTICATED))
@pytest.mark.parametrize("token", [None, "nbl_0badc0de_" + "x" * 32, "Basic Zm9vOmJhcg=="])
def test_an_api_write_without_a_valid_token_is_refused_before_its_body_is_read(
    server: Server, route: str, token: str | None
) -> None:
    method, path = route.split()[0], WRITES[route]
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = token if token.startswith("Basic") else f"Bearer {token}"
    announced = uploads.announced(server.port, path, 800 * MIB, headers, method=method)
    assert announced.status == 401, announced.head
    assert b"www-authenticate: bearer" in announced.head.lower()
    streamed = uploads.chunked(server.port, path, 800 * MIB, headers)
    assert streamed.status == 401, streamed.head
    assert streamed.sent <= GOT_AWAY


def test_only_the_signed_hooks_take_writes_without_a_token(server: Server) -> None:
    """The unauthenticated writes: the push notification (signed with the project's webhook
    secret, when it has one), Slack's interactions (signed with the signing secret) and
    signing in and out; every other write answers 401 without a token, whatever its body."""
    for route, path in WRITES.items():
        method = route.split()[0]
        headers = {"Content-Type": "application/json"}
        answer = uploads.announced(server.port, path, 0, headers, method=method)
        if route in UNAUTHENTICATED:
            assert answer.status != 401 or path == "/slack/interactions", (route, answer.head)
        else:
            assert answer.status == 401, (route, answer.head)
    # Slack's without its signature: 401 from the signature check, not from a token.
    unsigned = uploads.announced(server.port, "/slack/interactions", 0)
    assert unsigned.status == 401


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, str]]:
    tmp: Path = tmp_path_factory.mktemp("bodies-served")
    process, token = prepare_serve(tmp, GitRepo(tmp / "repo", bare=False), interval=3600)
    process.start()
    yield process, token
    process.kill()


def test_a_serving_process_holds_no_more_than_a_limit_however_much_is_sent(
    served: tuple[ServeProcess, str],
) -> None:
    process, token = served
    assert process.process is not None
    pid = process.process.pid
    before = uploads.peak_rss(pid)
    bearer = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for path, headers in [
        ("/hooks/git/shop", {}),
        ("/slack/interactions", {}),
        ("/api/v1/deployments/1/cancel", bearer),
        ("/api/v1/deployments/1/cancel", {}),  # no token: nothing read at all
    ]:
        for _ in range(2):
            answer = uploads.chunked(process.port, path, 256 * MIB, headers)
            assert answer.status in (401, 413), answer.head
    grown = uploads.peak_rss(pid) - before
    # The largest limit is 25 MiB; about twice that covers the buffers on the way.
    assert grown < 64 * MIB, f"the peak grew by {grown / MIB:.0f} MiB"
