"""``POST /hooks/git/{project}``: a push notification makes that project poll now.

``web/forges.py`` recognises the forge by its headers, checks its signature when the project
has a webhook secret (``nebula project set SLUG webhook_secret``), and reads the pushed refs;
this route does the I/O around it, in one transaction:

- a refused signature or token: 401 naming the header checked, and nothing changes;
- a ping or test event, a tag push, a push of other branches only: 200 ``ignored`` with the
  reason, nothing recorded or polled;
- a delivery id seen before (a replay, a forge's "redeliver"): 200 ``duplicate``, nothing;
- an unsigned notification (a project without a secret) within ``webhook_limit`` of the last
  poll it caused: 202 ``coalesced``; one poll at the end of that window covers it, scheduled
  through ``next_poll_at`` so any replica's scheduler runs it;
- otherwise the delivery id is recorded (pruned after 7 days by the scheduler) and the project
  polls in the background: 202 ``polling``.

The payload decides only whether to poll: the poll asks the remote itself, so a forged or
stale payload cannot make Nebula deploy anything the branch does not hold.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import (
    APIRouter,
    BackgroundTasks,
    Depends,
    Path,
    Request,
    Response,
)
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reconciler import views
from reconciler.admin import projects
from reconciler.core.states import HookOutcome
from reconciler.errors import UnauthorizedError
from reconciler.gitops import polling
from reconciler.store import schema
from reconciler.web import forges, models
from reconciler.web.appstate import AppState, get_state
from reconciler.web.error_responses import documented

log = logging.getLogger("nebula.hooks")
router = APIRouter(tags=["hooks"])


def signature(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return forges.Scheme.PREFIXED_HMAC.sign(secret, body)


@dataclass(frozen=True)
class Receipt:
    forge: forges.Forge
    delivery: str | None
    outcome: HookOutcome
    reason: str | None = None


def _receive(
    state: AppState, slug: str, headers: forges.Headers, body: bytes
) -> Receipt | forges.Refusal:
    """Verify, decide and record one notification (see the module's docstring)."""
    now = state.ctx.clock.now()
    with state.ctx.db.transaction() as session:
        project = projects.get(session, slug, lock=True)
        secret = None
        if project.webhook_secret is not None:
            secret = state.ctx.vault.decrypt(project.webhook_secret)
        note = forges.receive(headers, body, secret=secret, branch=project.branch)
        if isinstance(note, forges.Refusal):
            return note
        if note.action is forges.Action.IGNORE:
            return Receipt(note.forge, note.delivery, HookOutcome.IGNORED, note.reason)
        if note.delivery is not None and _seen(session, project, note.delivery):
            return Receipt(note.forge, note.delivery, HookOutcome.DUPLICATE)
        if not note.signed:
            covered_by = _coalesce(project, now)
            if covered_by is not None:
                reason = (
                    f"unsigned push notifications poll {slug} at most once every "
                    f"{project.webhook_limit_seconds}s; the poll at {views.iso(covered_by)} "
                    "covers this one"
                )
                return Receipt(note.forge, note.delivery, HookOutcome.COALESCED, reason)
        if note.delivery is not None and not _record(session, project, note.delivery, now):
            return Receipt(note.forge, note.delivery, HookOutcome.DUPLICATE)
        if not note.signed:
            project.webhook_polled_at = now
        return Receipt(note.forge, note.delivery, HookOutcome.POLLING)


def _seen(session: Session, project: schema.Project, delivery: str) -> bool:
    return session.get(schema.WebhookDelivery, (project.id, delivery)) is not None


def _record(session: Session, project: schema.Project, delivery: str, now: datetime) -> bool:
    """Record the delivery id; False when another request recorded it first."""
    try:
        with session.begin_nested():
            session.add(
                schema.WebhookDelivery(delivery_id=delivery, project_id=project.id, received_at=now)
            )
    except IntegrityError:
        return False  # the same delivery, received twice at once
    return True


def _coalesce(project: schema.Project, now: datetime) -> datetime | None:
    """Within ``webhook_limit`` of the last poll unsigned notifications caused: the time of
    the poll that covers this one (scheduled here if none is yet), else None (poll now)."""
    limit = project.webhook_limit_seconds
    last = project.webhook_polled_at
    if not limit or last is None:
        return None
    if last > now:
        return last  # a poll is already scheduled after this notification
    slot = last + timedelta(seconds=limit)
    if now >= slot:
        return None
    project.webhook_polled_at = slot
    if project.next_poll_at is None or slot < project.next_poll_at:
        project.next_poll_at = slot
    return slot


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
            "description": "ignored (a ping, a tag, another branch) or duplicate: nothing done",
        },
        **documented(401, 404, 422),
    },
    summary="A push notification from GitHub, GitLab, Gitea, Forgejo or Bitbucket: poll now",
)
async def git_push(
    project: Annotated[str, Path(pattern=models.NAME_PATTERN, max_length=40)],
    request: Request,
    response: Response,
    background: BackgroundTasks,
    state: Annotated[AppState, Depends(get_state)],
) -> dict[str, Any]:
    body = await request.body()  # at most 25 MiB: web.admission refused a larger one unread
    headers = {name.lower(): value for name, value in request.headers.items()}
    received = await run_in_threadpool(_receive, state, project, headers, body)
    if isinstance(received, forges.Refusal):
        state.metrics.webhook(project, HookOutcome.UNAUTHORIZED.value)
        log.info(
            "push notification refused",
            extra={"project": project, "forge": received.forge.value, "header": received.header},
        )
        raise UnauthorizedError(
            received.message,
            hint="set the same secret on the git host and with: "
            f"nebula project set {project} webhook_secret",
        )
    outcome = received.outcome
    state.metrics.webhook(project, outcome.value)
    log.info(
        "push notification",
        extra={
            "project": project,
            "forge": received.forge.value,
            "delivery": received.delivery,
            "outcome": outcome.value,
        },
    )
    if outcome in (HookOutcome.DUPLICATE, HookOutcome.IGNORED):
        response.status_code = 200
    elif outcome is HookOutcome.POLLING:
        if state.scheduler is not None:
            state.scheduler.poll_soon(project)
        else:
            background.add_task(_poll_inline, state, project)
    return {
        "project": project,
        "forge": received.forge.value,
        "delivery": received.delivery,
        "status": outcome.value,
        "reason": received.reason,
    }
