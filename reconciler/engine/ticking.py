"""The reconcile tick: claim each open deployment's lease, take one step, commit.

A step is: gather facts (short transaction), call the cluster (no transaction held), then in
one transaction re-check the deployment did not move meanwhile and commit the decision, the
stage marker and the event together. Transient cluster errors are retried with backoff, at
most 3 times per stage; an unreachable cluster sets ``delivery`` and waits.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session, selectinload

from reconciler.context import Context
from reconciler.core import deciding, messages
from reconciler.core.deciding import Decision, Step
from reconciler.core.states import Blocker, DeploymentState, ServiceStatus
from reconciler.core.transitions import Trigger
from reconciler.engine import objects, recording, removing, stages
from reconciler.errors import ConfigurationError, NebulaError, PermanentError, TransientError
from reconciler.runtimes.cluster import UnreachableError
from reconciler.store import schema
from renderers.capabilities import Capabilities

log = logging.getLogger("nebula.engine")
S = DeploymentState
LEASE = timedelta(seconds=60)
MAX_RETRIES = 3
ACTIVE_STATES = [
    s.value for s in DeploymentState if not s.is_final and s is not S.AWAITING_APPROVAL
]


def replica_id(ctx: Context) -> str:
    return ctx.settings.replica_id or f"{socket.gethostname()}:{os.getpid()}"


# What a tick looks for, as two conditions so each can use an index: deployments in flight
# (``finished_at IS NULL``: ix_deployments_open) and ended ones whose pods are still to be
# removed. Neither grows with the history of finished deployments.
_IN_FLIGHT = and_(
    schema.Deployment.finished_at.is_(None), schema.Deployment.state.in_(ACTIVE_STATES)
)
_CLEANUP = schema.Deployment.stage_marker == "cleanup"


def _work(session: Session, project: str | None, limit: int | None = None) -> list[int]:
    ids: set[int] = set()
    for condition in (_IN_FLIGHT, _CLEANUP):
        query = select(schema.Deployment.id).where(condition)
        if project is not None:
            query = query.join(
                schema.Project, schema.Project.id == schema.Deployment.project_id
            ).where(schema.Project.slug == project)
        ids.update(session.scalars(query.limit(limit)))
        if limit is not None and ids:
            break
    return sorted(ids)


def _teardowns(session: Session, limit: int | None = None) -> list[int]:
    return list(
        session.scalars(
            select(schema.Unit.id)
            .where(schema.Unit.status == ServiceStatus.PENDING_TEARDOWN.value)
            .limit(limit)
        )
    )


def tick(ctx: Context, project: str | None = None) -> tuple[int, bool]:
    """One pass over every open deployment; returns (steps taken, anything still moving)."""
    moved = 0
    with ctx.db.transaction() as session:
        ids = _work(session, project)
        teardown = _teardowns(session)
    if not ids and not teardown:
        return 0, False  # an idle tick: nothing found, nothing to re-check
    owner = replica_id(ctx)
    for deployment_id in ids:
        if not _claim(ctx, deployment_id, owner):
            continue
        try:
            moved += int(step(ctx, deployment_id))
        finally:
            _release(ctx, deployment_id, owner)
    for unit_id in teardown:
        moved += int(removing.teardown(ctx, unit_id))
    with ctx.db.transaction() as session:
        busy = bool(_work(session, None, limit=1) or _teardowns(session, limit=1))
    return moved, busy


def _claim(ctx: Context, deployment_id: int, owner: str) -> bool:
    """Take the deployment's lease: free, ours, or expired (its holder died)."""
    now = ctx.clock.now()
    claimable = and_(
        schema.Deployment.id == deployment_id,
        or_(
            schema.Deployment.lease_owner.is_(None),
            schema.Deployment.lease_owner == owner,
            schema.Deployment.lease_expires_at < now,
        ),
    )
    with ctx.db.transaction() as session:
        if not ctx.db.is_sqlite:
            # Several replicas on PostgreSQL: a row another replica is claiming right now is
            # skipped, not waited for. (SQLite has one writer: the UPDATE below is enough.)
            locked = session.scalars(
                select(schema.Deployment.id).where(claimable).with_for_update(skip_locked=True)
            ).first()
            if locked is None:
                return False
        result = session.execute(
            update(schema.Deployment)
            .where(claimable)
            .values(lease_owner=owner, lease_expires_at=now + LEASE)
            .execution_options(synchronize_session=False)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]


def _release(ctx: Context, deployment_id: int, owner: str) -> None:
    with ctx.db.transaction() as session:
        session.execute(
            update(schema.Deployment)
            .where(schema.Deployment.id == deployment_id, schema.Deployment.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )


def step(ctx: Context, deployment_id: int) -> bool:
    """Take one step for one deployment; True if anything was recorded."""
    with ctx.db.transaction() as session:
        d = session.get(schema.Deployment, deployment_id)
        if d is None:
            return False
        state = S(d.state)
        cleanup = state.is_final and d.stage_marker == "cleanup"
        cluster = objects.cluster_for(ctx, d) if state in stages.STAGES else None
    if cleanup:
        return removing.cleanup(ctx, deployment_id)
    capabilities: Capabilities | None = None
    discovery: NebulaError | None = None
    if cluster is not None:
        try:  # a network call on first use: never inside a transaction
            capabilities = cluster.capabilities()
        except (TransientError, PermanentError) as exc:
            discovery = exc
    with ctx.db.transaction() as session:
        d = session.get(schema.Deployment, deployment_id, with_for_update=True)
        if d is None or d.state != state.value:
            return False
        if state.is_final or state is S.AWAITING_APPROVAL:
            return False
        if d.next_attempt_at is not None and ctx.clock.now() < d.next_attempt_at:
            return False
        if state is S.PENDING:
            return _pending(ctx, session, d)
        if discovery is not None or capabilities is None or cluster is None:
            # Rendering needs what the cluster serves: a reconciler started while the API is
            # down fails this stage's call (`delivery`), not the tick.
            previous = d.unit.active_release
            before = previous.name if previous is not None and previous.id != d.release_id else None
            unknown = discovery or TransientError("the cluster's API versions are unknown")
            return _failed_call(
                ctx, session, d, state, unknown, messages.keeps_serving(before), before
            )
        try:
            facts = objects.facts(session, ctx, d, capabilities)
        except ConfigurationError as exc:
            return _not_compilable(ctx, session, d, exc)
    run = stages.STAGES[state]
    error: NebulaError | None = None
    try:
        outcome = run(facts, cluster, ctx.settings)
    except UnreachableError as exc:
        outcome, error = None, exc
    except (TransientError, PermanentError) as exc:
        outcome, error = None, exc
    with ctx.db.transaction() as session:
        # Locked, so a cancel or supersession committing now is seen, never overwritten: on
        # PostgreSQL (READ COMMITTED) a plain read would return the old state, and our UPDATE,
        # once their lock is released, would write over theirs.
        d = session.get(schema.Deployment, deployment_id, with_for_update=True)
        if d is None or d.state != state.value:
            return False  # someone else moved it meanwhile (cancel, supersede): drop our step
        if outcome is not None:
            if d.blocker == Blocker.DELIVERY.value:
                d.stage_started_at = ctx.clock.now()  # the outage does not count against the stage
            if outcome.marker is not None:
                d.stage_marker = outcome.marker
            return _apply(ctx, session, d, outcome.decision)
        assert error is not None
        return _failed_call(ctx, session, d, state, error, facts.keeps, facts.previous)


def _apply(ctx: Context, session: Session, d: schema.Deployment, decision: Decision) -> bool:
    if decision.step is Step.MOVE:
        assert decision.trigger is not None
        recording.move(
            session,
            ctx.clock,
            d,
            decision.trigger,
            message=decision.message,
            blocker=decision.blocker,
        )
        return True
    d.waiting_on_id = decision.waiting_on if decision.waiting_on is not None else d.waiting_on_id
    return recording.note(session, ctx.clock, d, blocker=decision.blocker, message=decision.message)


def _pending(ctx: Context, session: Session, d: schema.Deployment) -> bool:
    others = session.scalars(
        select(schema.Deployment)
        .where(
            schema.Deployment.environment_id == d.environment_id,
            or_(schema.Deployment.finished_at.is_(None), schema.Deployment.id == d.waiting_on_id),
        )
        # Their unit and release names, loaded together: one query each, not two per deployment
        # in flight (an environment deploying 50 services made each pending step 100 queries).
        .options(selectinload(schema.Deployment.unit), selectinload(schema.Deployment.release))
    ).all()
    view = deciding.Pending(
        id=d.id,
        unit=d.unit.name,
        queued_at=d.queued_at or d.created_at,
        dependencies=tuple(d.release.config.get("dependencies", [])),
        waiting_on=d.waiting_on_id,
        running=d.unit.active_release.name if d.unit.active_release else None,
    )
    decision = deciding.pending(
        view,
        [
            deciding.Other(o.id, o.unit.name, o.release.name, S(o.state), o.queued_at)
            for o in others
            if o.id != d.id
        ],
    )
    if decision.step is Step.MOVE and decision.trigger is Trigger.ADMIT:
        d.waiting_on_id = None
    return _apply(ctx, session, d, decision)


def _not_compilable(
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
            message=f"{exc.message}. {keeps}",
        )
        return True
    hint = f" ({exc.hint})" if exc.hint else ""
    return recording.note(
        session, ctx.clock, d, blocker=Blocker.CONFIGURATION, message=f"{exc.message}{hint}"
    )


def _failed_call(
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
            message=f"{error.message}. {keeps}",
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
