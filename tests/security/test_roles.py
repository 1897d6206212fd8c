"""Every write endpoint of the JSON API, called as every kind of caller: the status it answers,
and that a refused call changed nothing (a permitted one is recorded under the token's member).

Deciding an approval takes the approve grant there (admins and owners hold it everywhere);
asking for a deployment (rollback, promote, redeploy) or cancelling one takes the deploy grant
there (a member holds it in unprotected environments); suspending, resuming and every act of
administration take an admin or an owner; without a valid token nothing happens (401), and
the token is checked first, so an anonymous caller cannot learn what exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler.admin import principals
from reconciler.core.states import DecisionChannel
from reconciler.requests import deciding
from reconciler.web.app import create_app
from tests.plugins.git import GitRepo
from tests.plugins.nebula import nebula_with
from tests.security import administration
from tests.security.acting import Acting, build
from tests.security.world import app_routes

# caller -> the name whose token is sent (None: no Authorization header at all)
CALLERS: dict[str, str | None] = {
    "no token": None,
    "bad token": "nbl_0badc0de_" + "x" * 32,
    "member": "bob",
    "admin": "alice",
    "owner": "olga",
}


@dataclass(frozen=True)
class Endpoint:
    route: str  # as the app declares it
    expected: dict[str, int]  # caller -> status
    call: Callable[[Acting, str | None], tuple[int, bool]]  # -> (status, took effect)


def _decide(verb: str) -> Callable[[Acting, str | None], tuple[int, bool]]:
    def call(acting: Acting, who: str | None) -> tuple[int, bool]:
        approval = acting.pending_approval(requester="bob")
        response = acting.post(f"/api/v1/approvals/{approval}/{verb}", who)
        after = acting.approval(approval)
        if after.state == "pending":
            return response.status_code, False
        assert after.state == {"approve": "approved", "reject": "rejected"}[verb]
        assert after.decided_by == who, "recorded under the token's member"
        return response.status_code, True

    return call


def _ask(verb: str, body: dict[str, str]) -> Callable[[Acting, str | None], tuple[int, bool]]:
    def call(acting: Acting, who: str | None) -> tuple[int, bool]:
        acting.call_off(body.get("to", body.get("environment", "")))  # so it is a new request
        before = acting.deployment_count()
        response = acting.post(f"/api/v1/projects/shop/services/api/{verb}", who, json=body)
        if acting.deployment_count() == before:
            return response.status_code, False
        made = acting.deployment(response.json()["deployment"]["id"])
        assert made.requested_by == who, "recorded under the token's member"
        return response.status_code, True

    return call


def _cancel(acting: Acting, who: str | None) -> tuple[int, bool]:
    deployment = acting.open_deployment()
    response = acting.post(f"/api/v1/deployments/{deployment}/cancel", who)
    return response.status_code, acting.deployment(deployment).state == "cancelled"


def _suspend(acting: Acting, who: str | None) -> tuple[int, bool]:
    response = acting.post(
        "/api/v1/projects/shop/suspend", who, json={"env": "production", "reason": "incident"}
    )
    suspended = acting.suspended("production")
    if suspended is not None:
        assert suspended == who, "recorded under the token's member"
        acting.resume("production")  # as it was, for the next call
    return response.status_code, suspended is not None


def _resume(acting: Acting, who: str | None) -> tuple[int, bool]:
    acting.suspend("production")
    response = acting.post("/api/v1/projects/shop/resume", who, json={"env": "production"})
    resumed = acting.suspended("production") is None
    if not resumed:
        acting.resume("production")
    return response.status_code, resumed


def _read_inbox(acting: Acting, who: str | None) -> tuple[int, bool]:
    """Each caller has something unread: bob a decision on his request, the others the
    approval he asks for next. Marking one's own inbox read takes no right but a token."""
    decided = acting.pending_approval(requester="bob")
    with acting.nebula.ctx.db.transaction() as session:
        olga = principals.by_name(session, "olga")
        deciding.decide(
            session, acting.nebula.ctx, int(decided), olga, approve=False, via=DecisionChannel.CLI
        )
    acting.pending_approval(requester="bob")
    before = acting.inbox_reads(who)
    response = acting.post("/api/v1/inbox/read", who, json={"all": True})
    return response.status_code, acting.inbox_reads(who) > before


DECIDE = {"no token": 401, "bad token": 401, "member": 403, "admin": 200, "owner": 200}
ASK = {"no token": 401, "bad token": 401, "member": 200, "admin": 200, "owner": 200}
ADMINISTER = DECIDE

ENDPOINTS = {
    "approve": Endpoint("/api/v1/approvals/{approval_id}/approve", DECIDE, _decide("approve")),
    "reject": Endpoint("/api/v1/approvals/{approval_id}/reject", DECIDE, _decide("reject")),
    "rollback": Endpoint(
        "/api/v1/projects/{slug}/services/{service}/rollback",
        ASK,
        _ask("rollback", {"environment": "staging"}),
    ),
    "promote": Endpoint(  # into production: a member holds no deploy grant there
        "/api/v1/projects/{slug}/services/{service}/promote",
        DECIDE,
        _ask("promote", {"from": "staging", "to": "production"}),
    ),
    "redeploy": Endpoint(
        "/api/v1/projects/{slug}/services/{service}/redeploy",
        ASK,
        _ask("redeploy", {"environment": "staging"}),
    ),
    "cancel": Endpoint("/api/v1/deployments/{deployment_id}/cancel", ASK, _cancel),
    "suspend": Endpoint("/api/v1/projects/{slug}/suspend", DECIDE, _suspend),
    "resume": Endpoint("/api/v1/projects/{slug}/resume", DECIDE, _resume),
    **{
        name: Endpoint(route, ADMINISTER, call)
        for name, (route, call) in administration.ACTS.items()
    },
    "reconcile": Endpoint("/api/v1/reconcile", ASK, administration.reconcile),
    "create one's own token": Endpoint("/api/v1/tokens", ASK, administration.create_token),
    "read one's inbox": Endpoint("/api/v1/inbox/read", ASK, _read_inbox),
}
# Applying and discarding a change set take the deploy grant in its environment, checked by
# the same function as a redeploy's; tests/cli/test_people.py and the stateful robustness
# machine (tests/robustness) ask it of every role, with real drafts.
ELSEWHERE = {"/api/v1/changesets/{changeset_id}/apply", "/api/v1/changesets/{changeset_id}/discard"}
# Signing in is how one gets a token: open to anyone (tests/web/test_sso.py, test_bodies.py).
SIGNING_IN = {"/api/v1/sso/device", "/api/v1/sso/authorize", "/api/v1/sso/token"}


@pytest.fixture(scope="module")
def acting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acting]:
    tmp: Path = tmp_path_factory.mktemp("roles")
    for nebula in nebula_with(tmp):
        yield from build(nebula, GitRepo(tmp / "repo", bare=False))


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_each_write_endpoint_answers_each_caller_as_the_table_says(
    acting: Acting, endpoint: str, caller: str
) -> None:
    spec = ENDPOINTS[endpoint]
    status, took_effect = spec.call(acting, CALLERS[caller])
    assert status == spec.expected[caller]
    assert took_effect == (status == 200), "a refused call must change nothing"


def test_the_table_covers_every_write_route_of_the_app(acting: Acting) -> None:
    routes = app_routes(create_app(acting.nebula.ctx))
    writes = {p for p, methods in routes if p.startswith("/api/") and methods - {"GET", "HEAD"}}
    assert writes == {e.route for e in ENDPOINTS.values()} | ELSEWHERE | SIGNING_IN


def test_an_admin_cannot_approve_their_own_request(acting: Acting) -> None:
    approval = acting.pending_approval(requester="alice")
    response = acting.post(f"/api/v1/approvals/{approval}/approve", "alice")
    assert response.status_code == 403
    assert response.json()["error"] == (
        "Your policy forbids approving your own deploys: someone else must approve this request."
    )
    assert acting.approval(approval).state == "pending"
    assert acting.post(f"/api/v1/approvals/{approval}/approve", "carol").status_code == 200


def test_a_member_is_told_why_they_cannot_decide(acting: Acting) -> None:
    approval = acting.pending_approval()
    response = acting.post(f"/api/v1/approvals/{approval}/reject", "bob")
    assert response.json() == {
        "error": "bob may not reject in shop/production: needs the approve grant or the admin role",
        "hint": "an admin can grant it: nebula grant add bob approve --project shop --env production",
        "code": "forbidden",
    }


def test_a_role_change_takes_effect_for_existing_tokens(acting: Acting) -> None:
    acting.nebula.ok("member add carol --role member")
    try:
        approval = acting.pending_approval()
        assert acting.post(f"/api/v1/approvals/{approval}/approve", "carol").status_code == 403
    finally:
        acting.nebula.ok("member add carol --role admin")
    assert acting.post(f"/api/v1/approvals/{approval}/approve", "carol").status_code == 200


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/approvals/999999/approve", None),
        ("/api/v1/approvals/999999/reject", {"reason": "no"}),
        ("/api/v1/projects/nowhere/services/api/redeploy", {"environment": "staging"}),
        ("/api/v1/projects/shop/services/nothing/rollback", {"environment": "staging"}),
        ("/api/v1/projects/shop/services/api/promote", {"from": "staging", "to": "nowhere"}),
        ("/api/v1/deployments/999999/cancel", None),
        ("/api/v1/projects/nowhere/suspend", {"reason": "incident"}),
        ("/api/v1/projects/nowhere/resume", {"environment": "production"}),
    ],
)
def test_without_a_token_nothing_is_learnt_about_what_exists(
    acting: Acting, path: str, body: dict[str, str] | None
) -> None:
    anonymous = acting.post(path, None, json=body)
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert anonymous.json() == {
        "error": "Missing bearer token",
        "hint": None,
        "code": "unauthorized",
    }
    assert acting.post(path, "alice", json=body).status_code == 404
