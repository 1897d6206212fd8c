"""What a step records when its stage could not run: a release that cannot be compiled, or
a cluster call that failed (unreachable, refused for good, or failing for now).

Transient errors are retried with backoff, at most ``MAX_RETRIES`` times per stage; an
unreachable cluster sets ``delivery`` and waits; activation retries until its own timeout;
a drain is never a failure (traffic has already moved).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from reconciler.context import Context
from reconciler.core import messages
from reconciler.core.states import Blocker, DeploymentState
from reconciler.core.transitions import Trigger
from reconciler.engine import recording, stages
from reconciler.errors import ConfigurationError, NebulaError, PermanentError, UnreachableError
from reconciler.store import schema

S = DeploymentState
MAX_RETRIES = 3


def not_compilable(
    ctx: Context, session: Session, d: schema.Deployment, exc: ConfigurationError
) -> bool:
    """A release that cannot be compiled (a missing secret) waits with ``configuration`` so it
    can be fixed in place, and fails with it once the readiness timeout has passed."""
    keeps = messages.keeps_serving(d.previous_release.name if d.previous_release else None)
    elapsed = ctx.clock.now() - (d.stage_started_at or d.created_at)
    if elapsed >= ctx.settings.readiness_timeout:
        recording.move(
            session,
            ctx.clock,
            d,
            Trigger.FAIL,
            blocker=Blocker.CONFIGURATION,
            message=messages.then(exc.message, keeps),
        )
        return True
    hint = f" ({exc.hint})" if exc.hint else ""
    return recording.note(
        session, ctx.clock, d, blocker=Blocker.CONFIGURATION, message=f"{exc.message}{hint}"
    )


def failed_call(
    ctx: Context,
    session: Session,
    d: schema.Deployment,
    state: DeploymentState,
    error: NebulaError,
    keeps: str,
    previous: str | None,
) -> bool:
    now = ctx.clock.now()
    if isinstance(error, UnreachableError):
        return recording.note(
            session,
            ctx.clock,
            d,
            blocker=Blocker.DELIVERY,
            message=f"The cluster cannot be reached ({error.message}); {keeps[0].lower() + keeps[1:]}",
        )
    if isinstance(error, PermanentError):
        blocker = _blocker(error.code) or stages.RETRY_BLOCKER[state]
        recording.move(
            session,
            ctx.clock,
            d,
            Trigger.FAIL,
            blocker=blocker,
            message=messages.then(error.message, keeps),
        )
        return True
    if state is S.ACTIVATING:
        # The API keeps refusing the selector patch: retry until the route-activation timeout.
        if now - (d.stage_started_at or now) >= ctx.settings.route_activation_timeout:
            spent = int(ctx.settings.route_activation_timeout.total_seconds())
            recording.move(
                session,
                ctx.clock,
                d,
                Trigger.FAIL,
                blocker=Blocker.ROUTE_ACTIVATION,
                message=f"The API kept refusing to repoint {d.unit.name} for {spent}s ({error.message}). {keeps}",
            )
            return True
        d.next_attempt_at = now + timedelta(seconds=1)
        return recording.note(
            session, ctx.clock, d, blocker=None, message=f"Retrying activation: {error.message}"
        )
    d.attempts += 1
    if state is S.DRAINING:
        # Traffic has moved: the new release serves. A drain the API refuses is retried
        # (``stalled`` once the usual retries are spent), never a failure that would say the
        # previous release keeps serving.
        d.next_attempt_at = now + timedelta(seconds=min(2 ** (d.attempts - 1), 60))
        if d.attempts <= MAX_RETRIES:
            return recording.note(
                session,
                ctx.clock,
                d,
                blocker=None,
                message=f"Retrying ({d.attempts}/{MAX_RETRIES}) after: {error.message}",
            )
        return recording.note(
            session,
            ctx.clock,
            d,
            blocker=Blocker.STALLED,
            message=f"Draining {previous} keeps failing ({error.message}); retrying. "
            f"{d.release.name} serves.",
        )
    if d.attempts > MAX_RETRIES:
        recording.move(
            session,
            ctx.clock,
            d,
            Trigger.FAIL,
            blocker=stages.RETRY_BLOCKER[state],
            message=f"The cluster kept failing ({error.message}) after {MAX_RETRIES} retries. {keeps}",
        )
        return True
    d.next_attempt_at = now + timedelta(seconds=2 ** (d.attempts - 1))
    return recording.note(
        session,
        ctx.clock,
        d,
        blocker=None,
        message=f"Retrying ({d.attempts}/{MAX_RETRIES}) after: {error.message}",
    )


def _blocker(code: str) -> Blocker | None:
    try:
        return Blocker(code)
    except ValueError:
        return None
