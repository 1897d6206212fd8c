"""The reconcile tick: for each open deployment, claim its lease, take one step, commit.

A step is: claim the lease and read (short transaction), gather facts (another), call the
cluster (no transaction held), then in one transaction re-check the deployment did not move
meanwhile and commit the decision, the stage marker, the event and the lease's release
together. What a failed call records is in ``failing``.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session, joinedload, selectinload
from sqlalchemy.sql.elements import ColumnElement

from reconciler.context import Context
from reconciler.core import deciding, messages
from reconciler.core.deciding import Decision, Step
from reconciler.core.states import (
    IN_FLIGHT_STATES,
    Blocker,
    DeploymentState,
    ServiceStatus,
    StageMarker,
)
from reconciler.core.transitions import Trigger
from reconciler.engine import failing, objects, recording, releases, removing, stages
from reconciler.errors import (
    ConfigurationError,
    NebulaError,
    PermanentError,
    TransientError,
    UnreachableError,
)
from reconciler.runtimes.cluster import Cluster
from reconciler.store import schema
from renderers.capabilities import Capabilities

log = logging.getLogger("nebula.engine")
S = DeploymentState
LEASE = timedelta(seconds=60)


def replica_id(ctx: Context) -> str:
    return ctx.settings.replica_id or f"{socket.gethostname()}:{os.getpid()}"


# What a tick looks for, as two conditions so each can use an index: deployments in flight
# (``finished_at IS NULL``: ix_deployments_open) and ended ones whose pods are still to be
# removed. Neither grows with the history of finished deployments.
_IN_FLIGHT = and_(
    schema.Deployment.finished_at.is_(None), schema.Deployment.state.in_(IN_FLIGHT_STATES)
)
_CLEANUP = schema.Deployment.stage_marker == StageMarker.CLEANUP


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
        moved += int(step(ctx, deployment_id, owner))
    for unit_id in teardown:
        moved += int(removing.teardown(ctx, unit_id))
    with ctx.db.transaction() as session:
        busy = _moving(session) or bool(_teardowns(session, limit=1))
    return moved, busy


def _moving(session: Session) -> bool:
    """Whether a deployment can still move without a person: one held on ``configuration``
    (its release cannot be compiled until someone runs ``nebula secret set``) cannot, nor can
    one only waiting for another deployment; whatever that one waits on is counted itself."""
    held = and_(
        schema.Deployment.blocker.is_not(None),
        schema.Deployment.blocker.in_([Blocker.CONFIGURATION.value, Blocker.WAITING.value]),
    )
    query = select(schema.Deployment.id).where(_IN_FLIGHT, ~held).limit(1)
    return session.scalars(query).first() is not None or bool(
        session.scalars(select(schema.Deployment.id).where(_CLEANUP).limit(1)).first()
    )


# What a step reads of a deployment, in the query that reads it (not one lazy load each).
_LOADED = (
    joinedload(schema.Deployment.environment).joinedload(schema.Environment.project),
    joinedload(schema.Deployment.unit).joinedload(schema.Unit.active_release),
    joinedload(schema.Deployment.release),
)


def _claimable(ctx: Context, owner: str) -> ColumnElement[bool]:
    """Free, ours, or expired (its holder died)."""
    return or_(
        schema.Deployment.lease_owner.is_(None),
        schema.Deployment.lease_owner == owner,
        schema.Deployment.lease_expires_at < ctx.clock.now(),
    )


def _locked(
    ctx: Context, session: Session, deployment_id: int, owner: str
) -> schema.Deployment | None:
    """The deployment, row-locked, unless another live replica holds its lease. On PostgreSQL
    a row another replica is locking right now is skipped, not waited for (SQLite has one
    writer: its transactions already take turns)."""
    query = (
        select(schema.Deployment)
        .where(schema.Deployment.id == deployment_id, _claimable(ctx, owner))
        .options(*_LOADED)
    )
    if not ctx.db.is_sqlite:
        query = query.with_for_update(skip_locked=True, of=schema.Deployment)
    return session.scalars(query).unique().first()


def _reread(session: Session, deployment_id: int) -> schema.Deployment | None:
    """Read again under the row lock, waiting for it: our lease keeps other replicas' steps
    away, so what can hold it is a request (cancel, supersede) that must be seen, not skipped."""
    return session.get(
        schema.Deployment, deployment_id, with_for_update={"of": schema.Deployment}, options=_LOADED
    )


def claim(ctx: Context, deployment_id: int, owner: str) -> bool:
    """Take the deployment's lease in a transaction of its own (what another replica does)."""
    with ctx.db.transaction() as session:
        d = _locked(ctx, session, deployment_id, owner)
        if d is not None:
            d.lease_owner, d.lease_expires_at = owner, ctx.clock.now() + LEASE
        return d is not None


def _release(ctx: Context, deployment_id: int, owner: str) -> None:
    with ctx.db.transaction() as session:
        session.execute(
            update(schema.Deployment)
            .where(schema.Deployment.id == deployment_id, schema.Deployment.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )


def _unlease(d: schema.Deployment, owner: str) -> None:
    """Give the lease back in the transaction that ends the step: no transaction of its own."""
    if d.lease_owner == owner:
        d.lease_owner, d.lease_expires_at = None, None


def step(ctx: Context, deployment_id: int, owner: str | None = None) -> bool:
    """Take one step for one deployment; True if anything was recorded.

    Three short transactions for a stage: claim the lease and read (nothing to do releases
    nothing: a deployment waiting for its retry or for approval is not leased at all); gather
    the facts; record the outcome and give the lease back. The cluster is called in between,
    with the lease held and no transaction open. A pending deployment is decided at once under
    its row lock: it calls no cluster, so it needs no lease."""
    owner = owner or replica_id(ctx)
    with ctx.db.transaction() as session:
        d = _locked(ctx, session, deployment_id, owner)
        if d is None:
            return False
        state = S(d.state)
        cleanup = state.is_final and d.stage_marker == StageMarker.CLEANUP
        if not cleanup and (state.is_final or state is S.AWAITING_APPROVAL):
            return False
        if d.next_attempt_at is not None and ctx.clock.now() < d.next_attempt_at:
            return False
        if state is S.PENDING:
            return _pending(ctx, session, d)
        d.lease_owner, d.lease_expires_at = owner, ctx.clock.now() + LEASE
        cluster = ctx.cluster(d.environment) if state in stages.STAGES else None
    if cleanup or cluster is None:
        try:
            return removing.cleanup(ctx, deployment_id) if cleanup else False
        finally:
            _release(ctx, deployment_id, owner)
    try:
        return _stage(ctx, deployment_id, owner, state, cluster)
    except BaseException:
        _release(ctx, deployment_id, owner)  # the step's last transaction did not commit
        raise


def _stage(
    ctx: Context, deployment_id: int, owner: str, state: DeploymentState, cluster: Cluster
) -> bool:
    capabilities: Capabilities | None = None
    discovery: NebulaError | None = None
    try:  # a network call on first use: never inside a transaction
        capabilities = cluster.capabilities()
    except (TransientError, PermanentError) as exc:
        discovery = exc
    with ctx.db.transaction() as session:
        d = _reread(session, deployment_id)
        if d is None:
            return False
        if d.state != state.value:
            _unlease(d, owner)
            return False
        if discovery is not None or capabilities is None:
            # Rendering needs what the cluster serves: a reconciler started while the API is
            # down fails this stage's call (`delivery`), not the tick.
            _unlease(d, owner)
            previous = d.unit.active_release
            before = previous.name if previous is not None and previous.id != d.release_id else None
            unknown = discovery or TransientError("the cluster's API versions are unknown")
            return failing.failed_call(
                ctx, session, d, state, unknown, messages.keeps_serving(before), before
            )
        try:
            facts = objects.facts(session, ctx, d, capabilities)
        except ConfigurationError as exc:
            _unlease(d, owner)
            return failing.not_compilable(ctx, session, d, exc)
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
        d = _reread(session, deployment_id)
        if d is None:
            return False
        _unlease(d, owner)
        if d.state != state.value:
            return False  # someone else moved it meanwhile (cancel, supersede): drop our step
        if outcome is not None:
            if d.blocker == Blocker.DELIVERY.value:
                d.stage_started_at = ctx.clock.now()  # the outage does not count against the stage
            if outcome.marker is not None:
                d.stage_marker = outcome.marker
            return _apply(ctx, session, d, outcome.decision)
        assert error is not None
        return failing.failed_call(ctx, session, d, state, error, facts.keeps, facts.previous)


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
        dependencies=releases.frozen(d.release).dependencies,
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
