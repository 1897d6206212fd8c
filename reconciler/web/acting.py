"""``POST /api/v1/...``: approve, reject, rollback, promote, redeploy, cancel.

Every write needs ``Authorization: Bearer <token>`` (``nebula token create``). The token's
member is who acts: a decision is recorded under that member, and ``deciding.decide``
enforces that only an admin or owner decides (and the self-approval policy). Asking for a
deployment (rollback, promote, redeploy, cancel) takes any member. The token is checked
before anything else, so an anonymous caller learns nothing about what exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Depends, Path
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from sqlalchemy.orm import Session

from reconciler import views
from reconciler.admin import members
from reconciler.context import Context
from reconciler.core.states import DecisionChannel
from reconciler.requests import actions, deciding
from reconciler.store import schema
from reconciler.web import models
from reconciler.web.appstate import AppState, get_state, parse_id
from reconciler.web.error_responses import documented

router = APIRouter(prefix="/api/v1", tags=["act"])
bearer = HTTPBearer(
    auto_error=False,
    description="An API token from `nebula token create --as NAME`; the member it belongs to acts.",
)
State = Annotated[AppState, Depends(get_state)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
Name = Annotated[str, Path(pattern=models.NAME_PATTERN, max_length=40)]
Id = Annotated[str, Path(max_length=40, description="a numeric id, as a string")]
ACTING = documented(401, 403, 404, 409, 422)
Route = TypeVar("Route", bound=Callable[..., Any])


def _post(path: str, model: type[BaseModel], summary: str) -> Callable[[Route], Route]:
    """A write route: the model it answers with, and 401/403/404/409/422 documented."""
    return router.post(path, response_model=model, responses=ACTING, summary=summary)


def _member(
    session: Session, state: AppState, credentials: HTTPAuthorizationCredentials | None
) -> str:
    token = credentials.credentials if credentials is not None else None
    member: schema.Member = members.authenticate(session, state.ctx.clock, token)
    return member.name


def _act(
    state: AppState,
    credentials: HTTPAuthorizationCredentials | None,
    act: Callable[[Session, Context, str], dict[str, Any]],
) -> dict[str, Any]:
    """Authenticate, act as the token's member in one transaction, wake the tick."""
    with state.ctx.db.transaction() as session:
        data = act(session, state.ctx, _member(session, state, credentials))
    state.wake()
    return data


def _request(
    state: AppState,
    credentials: HTTPAuthorizationCredentials | None,
    ask: Callable[[Session, Context, str], actions.Requested],
) -> dict[str, Any]:
    """A rollback, promotion or redeploy, answered as ``models.Requested``."""

    def act(session: Session, ctx: Context, who: str) -> dict[str, Any]:
        result = ask(session, ctx, who)
        return {
            "deployment": views.deployment(result.deployment),
            "approval": views.approval(result.approval) if result.approval else None,
            "ended": views.ended(result.ended),
        }

    return _act(state, credentials, act)


def _decide(
    state: AppState,
    credentials: HTTPAuthorizationCredentials | None,
    approval_id: str,
    *,
    approve: bool,
    reason: str | None = None,
) -> dict[str, Any]:
    def decide(session: Session, ctx: Context, who: str) -> dict[str, Any]:
        decision = deciding.decide(
            session,
            ctx,
            parse_id(approval_id, "approval"),
            who,
            approve=approve,
            via=DecisionChannel.API,
            reason=reason,
        )
        return {"approval": views.approval(decision.approval), "ended": views.ended(decision.ended)}

    return _act(state, credentials, decide)


@_post(
    "/approvals/{approval_id}/approve", models.Decided, "Approve a pending request (admin or owner)"
)
def approve(approval_id: Id, state: State, credentials: Credentials) -> dict[str, Any]:
    return _decide(state, credentials, approval_id, approve=True)


@_post(
    "/approvals/{approval_id}/reject", models.Decided, "Reject a pending request (admin or owner)"
)
def reject(
    approval_id: Id,
    state: State,
    credentials: Credentials,
    body: Annotated[models.Reject | None, Body()] = None,
) -> dict[str, Any]:
    return _decide(
        state, credentials, approval_id, approve=False, reason=body.reason if body else None
    )


@_post(
    "/projects/{slug}/services/{service}/rollback",
    models.Requested,
    "Roll back to a retained release (default: the previous one)",
)
def rollback(
    slug: Name, service: Name, body: models.Rollback, state: State, credentials: Credentials
) -> dict[str, Any]:
    return _request(
        state,
        credentials,
        lambda s, c, who: actions.rollback(s, c, slug, service, body.environment, body.to, who),
    )


@_post(
    "/projects/{slug}/services/{service}/promote",
    models.Requested,
    "Promote the source environment's active release to the target environment",
)
def promote(
    slug: Name, service: Name, body: models.Promote, state: State, credentials: Credentials
) -> dict[str, Any]:
    return _request(
        state,
        credentials,
        lambda s, c, who: actions.promote(
            s, c, slug, service, body.source, body.target, who, skip_gate=body.skip_gate
        ),
    )


@_post(
    "/projects/{slug}/services/{service}/redeploy",
    models.Requested,
    "A new release from the image active now",
)
def redeploy(
    slug: Name, service: Name, body: models.Redeploy, state: State, credentials: Credentials
) -> dict[str, Any]:
    return _request(
        state,
        credentials,
        lambda s, c, who: actions.redeploy(s, c, slug, service, body.environment, who),
    )


@_post(
    "/deployments/{deployment_id}/cancel",
    models.Cancelled,
    "Cancel a deployment that has not taken traffic",
)
def cancel(deployment_id: Id, state: State, credentials: Credentials) -> dict[str, Any]:
    return _act(
        state,
        credentials,
        lambda session, ctx, who: {
            "deployment": views.deployment(
                actions.cancel(session, ctx, parse_id(deployment_id, "deployment"), who)
            )
        },
    )
