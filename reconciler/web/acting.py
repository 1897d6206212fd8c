"""``POST /api/v1/...``: approve, reject, rollback, promote, redeploy, cancel.

Every write needs ``Authorization: Bearer <token>`` (``nebula token create``). The token's
member is who acts: a decision is recorded under that member, and ``deciding.decide``
enforces that only an admin or owner decides (and the self-approval policy). Asking for a
deployment (rollback, promote, redeploy, cancel) takes any member. The token is checked
before anything else, so an anonymous caller learns nothing about what exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
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


def _requested(result: actions.Requested) -> dict[str, Any]:
    return {
        "deployment": views.deployment(result.deployment),
        "approval": views.approval(result.approval) if result.approval else None,
        "ended": views.ended(result.ended),
    }


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


@router.post(
    "/approvals/{approval_id}/approve",
    response_model=models.Decided,
    responses=ACTING,
    summary="Approve a pending request (admin or owner)",
)
def approve(approval_id: Id, state: State, credentials: Credentials) -> dict[str, Any]:
    return _decide(state, credentials, approval_id, approve=True)


@router.post(
    "/approvals/{approval_id}/reject",
    response_model=models.Decided,
    responses=ACTING,
    summary="Reject a pending request (admin or owner)",
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


@router.post(
    "/projects/{slug}/services/{service}/rollback",
    response_model=models.Requested,
    responses=ACTING,
    summary="Roll back to a retained release (default: the previous one)",
)
def rollback(
    slug: Name, service: Name, body: models.Rollback, state: State, credentials: Credentials
) -> dict[str, Any]:
    return _act(
        state,
        credentials,
        lambda session, ctx, who: _requested(
            actions.rollback(session, ctx, slug, service, body.environment, body.to, who)
        ),
    )


@router.post(
    "/projects/{slug}/services/{service}/promote",
    response_model=models.Requested,
    responses=ACTING,
    summary="Promote the source environment's active release to the target environment",
)
def promote(
    slug: Name, service: Name, body: models.Promote, state: State, credentials: Credentials
) -> dict[str, Any]:
    return _act(
        state,
        credentials,
        lambda session, ctx, who: _requested(
            actions.promote(session, ctx, slug, service, body.source, body.target, who)
        ),
    )


@router.post(
    "/projects/{slug}/services/{service}/redeploy",
    response_model=models.Requested,
    responses=ACTING,
    summary="A new release from the image active now",
)
def redeploy(
    slug: Name, service: Name, body: models.Redeploy, state: State, credentials: Credentials
) -> dict[str, Any]:
    return _act(
        state,
        credentials,
        lambda session, ctx, who: _requested(
            actions.redeploy(session, ctx, slug, service, body.environment, who)
        ),
    )


@router.post(
    "/deployments/{deployment_id}/cancel",
    response_model=models.Cancelled,
    responses=ACTING,
    summary="Cancel a deployment that has not taken traffic",
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
