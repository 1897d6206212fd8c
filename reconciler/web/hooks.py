"""``POST /hooks/git/{project}``: a push notification makes that project poll now.

GitHub-style: when the project has a webhook secret (``nebula project set SLUG
webhook_secret``), ``X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw body>`` must match,
else 401 and nothing happens. ``X-GitHub-Delivery`` is recorded; a delivery id seen before
(a replay, or GitHub's "redeliver") does nothing. The body is not read beyond the signature:
the poll asks the remote itself, so a forged or stale payload cannot make Nebula deploy
anything the branch does not hold. The answer comes at once; the poll runs in the background.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Annotated, Any

from fastapi import (
    APIRouter,
    BackgroundTasks,
    Depends,
    Header,
    Path,
    Request,
    Response,
)
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.exc import IntegrityError

from reconciler.admin import projects
from reconciler.errors import UnauthorizedError
from reconciler.gitops import polling
from reconciler.store import schema
from reconciler.web import models
from reconciler.web.appstate import AppState, get_state
from reconciler.web.error_responses import documented

log = logging.getLogger("nebula.hooks")
router = APIRouter(tags=["hooks"])


def signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def _receive(
    state: AppState, slug: str, body: bytes, signed: str | None, delivery: str | None
) -> str:
    """Verify and record one notification; returns ``polling`` or ``duplicate``."""
    with state.ctx.db.transaction() as session:
        project = projects.get(session, slug)
        if project.webhook_secret is not None:
            expected = signature(state.ctx.vault.decrypt(project.webhook_secret), body)
            if signed is None or not hmac.compare_digest(expected, signed.strip()):
                state.metrics.webhooks.labels("unauthorized").inc()
                raise UnauthorizedError(
                    "The X-Hub-Signature-256 signature does not match this project's webhook secret",
                    hint="set the same secret on the git host and with: "
                    f"nebula project set {slug} webhook_secret",
                )
        if delivery is None:
            return "polling"
        if session.get(schema.WebhookDelivery, delivery) is not None:
            return "duplicate"
        session.add(
            schema.WebhookDelivery(
                delivery_id=delivery, project_id=project.id, received_at=state.ctx.clock.now()
            )
        )
        try:
            session.flush()
        except IntegrityError:
            return "duplicate"  # the same delivery, received twice at once
    return "polling"


def _poll_inline(state: AppState, slug: str) -> None:
    """Without a scheduler (an app built for tests or tools), poll after the response."""
    report = polling.poll(state.ctx, [slug])
    state.metrics.polled(report, 0.0)


@router.post(
    "/hooks/git/{project}",
    status_code=202,
    response_model=models.HookReceipt,
    responses={
        200: {
            "model": models.HookReceipt,
            "description": "a delivery already received: nothing done",
        },
        **documented(401, 404, 422),
    },
    summary="A push notification: poll this project now",
)
async def git_push(
    project: Annotated[str, Path(pattern=models.NAME_PATTERN, max_length=40)],
    request: Request,
    response: Response,
    background: BackgroundTasks,
    state: Annotated[AppState, Depends(get_state)],
    x_hub_signature_256: Annotated[str | None, Header(max_length=200)] = None,
    x_github_delivery: Annotated[str | None, Header(max_length=100)] = None,
) -> dict[str, Any]:
    body = await request.body()  # at most 25 MB: web.admission refused a larger one unread
    delivery = (
        x_github_delivery.strip() if x_github_delivery and x_github_delivery.strip() else None
    )
    outcome = await run_in_threadpool(_receive, state, project, body, x_hub_signature_256, delivery)
    state.metrics.webhooks.labels(outcome).inc()
    log.info(
        "push notification", extra={"project": project, "delivery": delivery, "outcome": outcome}
    )
    if outcome == "duplicate":
        response.status_code = 200
    elif state.scheduler is not None:
        state.scheduler.poll_soon(project)
    else:
        background.add_task(_poll_inline, state, project)
    return {"project": project, "delivery": delivery, "status": outcome}
