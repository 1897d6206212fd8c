"""Cancelling in a protected environment takes an admin or an owner, or the person who asked
for the deployment (a member cancelled another member's production redeploy); elsewhere any
member may. The same rule on the command line and through the API, and a refusal changes
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.admin import members
from reconciler.requests import actions
from tests.plugins.git import GitRepo
from tests.plugins.nebula import nebula_with
from tests.security.acting import Acting, build


@pytest.fixture(scope="module")
def acting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Acting]:
    tmp: Path = tmp_path_factory.mktemp("cancelling")
    for nebula in nebula_with(tmp):
        for built in build(nebula, GitRepo(tmp / "repo", bare=False)):
            with nebula.ctx.db.transaction() as session:
                members.add(session, nebula.clock, "mona", "member")
                built.tokens["mona"] = members.create_token(session, nebula.clock, "mona")
            yield built


def _asked(acting: Acting, env: str, by: str = "bob") -> str:
    """A redeploy of ``env``'s api asked by ``by`` (in production: waiting for approval)."""
    with acting.nebula.ctx.db.transaction() as session:
        asked = actions.redeploy(session, acting.nebula.ctx, "shop", "api", env, by)
        return str(asked.deployment.id)


def _refusal(deployment: str, who: str) -> str:
    return (
        f"Deployment {deployment} is in a protected environment: only an admin or owner, or "
        f"the person who asked for it, can cancel it; {who}."
    )


def test_a_member_cannot_cancel_another_members_production_deployment(acting: Acting) -> None:
    deployment = _asked(acting, "production")
    refused = acting.nebula.cli(f"cancel {deployment} --as mona")
    assert (refused.code, refused.out) == (1, "")
    assert refused.err == (
        f"error: {_refusal(deployment, 'mona is a member')}\n"
        "hint: ask an admin or owner to cancel it (nebula cancel ID --as NAME)\n"
    )
    answer = acting.post(f"/api/v1/deployments/{deployment}/cancel", "mona")
    assert answer.status_code == 403
    assert answer.json()["error"]["message"] == _refusal(deployment, "mona is a member")
    assert acting.deployment(deployment).state == "awaiting-approval"
    # Without --as, the command line acts as nobody in particular: not enough here either.
    anonymous = acting.nebula.cli(f"cancel {deployment}")
    assert anonymous.err.startswith(f"error: {_refusal(deployment, repr('cli') + ' is no member')}")
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
