"""Cancelling takes the deploy grant there (an admin or an owner anywhere, any member in an
unprotected environment), or being the person who asked for the deployment (a member had
cancelled another member's production redeploy). The same rule on the command line and
through the API, and a refusal changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.requests import actions
from tests.plugins import people
from tests.plugins.git import GitRepo
from tests.plugins.nebula import nebula_with
from tests.security.acting import Acting, build, deploying


@pytest.fixture(scope="module")
def acting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acting]:
    tmp: Path = tmp_path_factory.mktemp("cancelling")
    for nebula in nebula_with(tmp):
        for built in build(nebula, GitRepo(tmp / "repo", bare=False)):
            with nebula.ctx.db.transaction() as session:
                people.member(session, nebula.clock, "mona", "member")
                built.tokens["mona"] = people.token(session, nebula.clock, "mona")
            yield built


def _asked(acting: Acting, env: str, by: str = "bob") -> str:
    """A redeploy of ``env``'s api asked by ``by`` (in production: waiting for approval)."""
    with acting.nebula.ctx.db.transaction() as session:
        who = deploying(session, by)
        asked = actions.redeploy(session, acting.nebula.ctx, "shop", "api", env, who)
        return str(asked.deployment.id)


def _refusal(deployment: str, who: str) -> str:
    return (
        f"{who} may not cancel deployment {deployment} in shop/production: needs the deploy "
        "grant or the admin role"
    )


def test_a_member_cannot_cancel_another_members_production_deployment(acting: Acting) -> None:
    deployment = _asked(acting, "production")
    refused = acting.nebula.cli(f"cancel {deployment} --as mona")
    assert (refused.code, refused.out) == (1, "")
    assert refused.err == (
        f"error: {_refusal(deployment, 'mona')}\n"
        "hint: an admin can grant it: nebula grant add mona deploy --project shop --env "
        "production\n"
    )
    answer = acting.post(f"/api/v1/deployments/{deployment}/cancel", "mona")
    assert answer.status_code == 403
    assert answer.json()["error"] == _refusal(deployment, "mona")
    assert acting.deployment(deployment).state == "awaiting-approval"


@pytest.mark.parametrize(
    ("who", "how"), [("bob", "cli"), ("bob", "api"), ("alice", "cli"), ("olga", "api")]
)
def test_the_requester_or_an_admin_or_owner_can(acting: Acting, who: str, how: str) -> None:
    deployment = _asked(acting, "production")
    if how == "cli":
        acting.nebula.ok(f"cancel {deployment} --as {who}")
    else:
        assert acting.post(f"/api/v1/deployments/{deployment}/cancel", who).status_code == 200
    assert acting.deployment(deployment).state == "cancelled"


def test_any_member_can_cancel_in_an_unprotected_environment(acting: Acting) -> None:
    deployment = _asked(acting, "staging")
    assert acting.post(f"/api/v1/deployments/{deployment}/cancel", "mona").status_code == 200
    assert acting.deployment(deployment).state == "cancelled"
