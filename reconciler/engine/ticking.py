"""The reconcile tick: claim a batch of due deployments, step each one, record the batch.

A batch takes two transactions of the engine's, however many deployments it holds (and, on
the simulated cluster, one more that stores its calls' writes):

1. one claims up to ``batching.SIZE`` due deployments (each gets this replica's lease) and
   reads what their steps need, in a constant number of queries (``batching``);
2. then, with no transaction open, each cluster's capabilities are read, each stage's facts
   rendered (``objects``) and the stage calls run on a pool of ``NEBULA_WORKERS`` workers
   (``stepping``), so deployments waiting on a slow API wait side by side, all inside each
   cluster's ``batch()`` (where the simulated API stores the batch's writes together);
3. the second transaction locks the batch's rows again, waiting for each lock, so a cancel or
   a supersession that committed meanwhile is seen and the step it overtook is dropped; then
   it records every decision, stage marker, event and lease's release together. A pending
   deployment calls no cluster: it is decided here (``admitting``), in id order with the rest.

A replica killed at any point leaves leases that expire; whoever takes them over replays at
most one idempotent call per deployment. A live replica keeps its leases from the claim to
the record, however long a slow API makes the calls (renewed every ``batching.RENEW``). What
a failed call records is in ``failing``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial

from sqlalchemy import and_, select, union_all, update
from sqlalchemy.orm import Session

from reconciler.admin import secrets
from reconciler.admin.secrets import Secrets
from reconciler.context import Context
from reconciler.core import messages, transitions
from reconciler.core.deciding import Decision, Step
from reconciler.core.states import Blocker, DeploymentState, ServiceStatus
from reconciler.engine import (
    admitting,
    batching,
    failing,
    objects,
    recording,
    removing,
    stages,
    stepping,
)
from reconciler.engine.batching import IN_FLIGHT, Claimed
from reconciler.engine.stages import Facts, Outcome
from reconciler.errors import ConfigurationError, NebulaError, PermanentError, TransientError
from reconciler.runtimes.cluster import Cluster
from reconciler.store import events, leases, schema
from renderers.capabilities import Capabilities

log = logging.getLogger("nebula.engine")
S = DeploymentState
LEASE = batching.LEASE
# What a failed call records (anything else a call raises is a bug: re-raised after the batch)
_FAILED_CALL = (TransientError, PermanentError)


def replica_id(ctx: Context) -> str:
    return ctx.settings.replica_id or f"{socket.gethostname()}:{os.getpid()}"


def _teardowns(session: Session, limit: int | None = None) -> list[int]:
    return list(
        session.scalars(
            select(schema.Unit.id)
            .where(schema.Unit.status == ServiceStatus.PENDING_TEARDOWN.value)
            .limit(limit)
        )
    )


@dataclass
class _Batch:
    """What one transaction claimed and read for a batch."""

    claimed: list[Claimed]
    secrets: Secrets = field(default_factory=dict)
    in_use: set[int] = field(default_factory=set)  # ended releases whose objects stay


def _read(ctx: Context, session: Session, ids: list[int]) -> _Batch:
    claimed = batching.read(session, ids)
    staged = [c for c in claimed if c.state in stages.STAGES]
    stored = secrets.values_in(session, ctx.vault, {(c.project_id, c.environment) for c in staged})
    objects.passwords(session, ctx, staged, stored)
    ended = [c for c in claimed if c.state.is_final]
    return _Batch(claimed, stored, removing.in_use(session, ended))


def tick(ctx: Context, project: str | None = None) -> tuple[int, bool]:
    """One pass over every open deployment, a batch at a time; returns (steps taken,
    anything still moving)."""
    owner = replica_id(ctx)
    moved, after, teardown = 0, 0, None
    while True:
        with ctx.db.transaction() as session:
            now = ctx.clock.now()
            sqlite = ctx.db.is_sqlite
            ids = batching.claim(
                session, owner, now, sqlite=sqlite, after=after, limit=batching.SIZE,
                project=project,
            )  # fmt: skip
            batch = _read(ctx, session, ids) if ids else None
            if teardown is None:
                teardown = _teardowns(session)
                if batch is None and not teardown:
                    # Nothing to do here: idle, or what moves is another replica's now.
                    return 0, _moving(session)
        if batch is not None:
            moved += _advance(ctx, owner, batch)
        if len(ids) < batching.SIZE:
            break  # nothing left above the last id claimed (the rest is another replica's)
        after = ids[-1]
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
    moving = select(schema.Deployment.id).where(IN_FLIGHT, ~held)
    cleanup = select(schema.Deployment.id).where(batching.CLEANUP)
    return session.scalars(union_all(moving, cleanup).limit(1)).first() is not None


def claim(ctx: Context, deployment_id: int, owner: str) -> bool:
    """Take the deployment's lease in a transaction of its own (what another replica does)."""
    with ctx.db.transaction() as session:
        now = ctx.clock.now()
        ids = [deployment_id]
        taken = batching.claim(session, owner, now, sqlite=ctx.db.is_sqlite, ids=ids, due=False)
        return bool(taken)


def step(ctx: Context, deployment_id: int, owner: str | None = None) -> bool:
    """Take one step for one deployment (a batch of one); True if anything was recorded.
    A deployment another replica holds or is locking, or one waiting for its retry or for
    approval, is left alone."""
    owner = owner or replica_id(ctx)
    with ctx.db.transaction() as session:
        now, ids = ctx.clock.now(), [deployment_id]
        claimed = batching.claim(session, owner, now, sqlite=ctx.db.is_sqlite, ids=ids)
        batch = _read(ctx, session, claimed) if claimed else None
    return batch is not None and _advance(ctx, owner, batch) > 0


def _stage(
    ctx: Context, deployment_id: int, owner: str, state: DeploymentState, cluster: Cluster
) -> bool:
    """The stage of a deployment ``owner`` has claimed already, on ``cluster``."""
    with ctx.db.transaction() as session:
        batch = _read(ctx, session, [deployment_id])
    if [c.state for c in batch.claimed] != [state]:
        return False
    return _advance(ctx, owner, batch, cluster) > 0


@dataclass
class _Step:
    """One deployment of a batch, from its claim to what its call returned."""

    claimed: Claimed
    cluster: Cluster | None = None  # the one its call is made to
    facts: Facts | None = None
    failed: NebulaError | None = None  # before the call: capabilities unknown, not compilable
    call: Callable[[], Outcome | None] | None = None
    result: Outcome | Exception | None = None


def _advance(ctx: Context, owner: str, batch: _Batch, cluster: Cluster | None = None) -> int:
    """Prepare each step, run the calls on the pool, record the batch; the steps recorded."""
    ids = [c.id for c in batch.claimed]
    try:
        with _kept(ctx, owner, ids):  # (discovery and rendering, the calls, their writes)
            steps = [_prepare(ctx, batch, c, cluster) for c in batch.claimed]
            called = [(s, s.call) for s in steps if s.call is not None]
            with _batch_of([s for s, _ in called]):
                results = stepping.run(ctx.settings.workers, [call for _, call in called])
        for (s, _), result in zip(called, results, strict=True):
            s.result = result
        moved = _record(ctx, owner, steps)
    except BaseException:
        _release(ctx, ids, owner)  # the batch did not commit
        raise
    for s, _ in called:
        if isinstance(s.result, Exception) and not isinstance(s.result, _FAILED_CALL):
            raise s.result  # a bug, not the cluster's answer: the others' steps are recorded
    return moved


def _kept(ctx: Context, owner: str, ids: list[int]) -> AbstractContextManager[None]:
    """``owner``'s leases on ``ids`` renewed until the block ends."""

    def renew() -> None:
        with ctx.db.transaction() as session:
            batching.renew(session, ids, owner, ctx.clock.now())

    return leases.renewing(renew, batching.RENEW, "nebula-step-lease") if ids else nullcontext()


@contextmanager
def _batch_of(steps: Sequence[_Step]) -> Iterator[None]:
    """The batch's calls, inside each cluster's ``batch()`` (its writes stored as it ends)."""
    clusters = {id(s.cluster): s.cluster for s in steps if s.cluster is not None}
    with ExitStack() as stack:
        for each in clusters.values():
            stack.enter_context(each.batch())
        yield


def _prepare(ctx: Context, batch: _Batch, c: Claimed, cluster: Cluster | None) -> _Step:
    s = _Step(c)
    if c.state is S.PENDING or (c.state.is_final and c.id in batch.in_use):
        return s  # decided (or cleaned up) when the batch is recorded
    cluster = cluster or ctx.clusters.for_environment(c.contexts, c.environment)
    s.cluster = cluster
    if c.state.is_final:
        s.call = partial(removing.remove_unserved, cluster, c)
        return s
    try:  # a network call on first use: never inside a transaction
        capabilities: Capabilities = cluster.capabilities()
    except _FAILED_CALL as exc:
        s.failed = exc  # rendering needs what the cluster serves: the stage's call fails
        return s
    try:
        stored = batch.secrets.get((c.project_id, c.environment), {})
        kept = objects.renders(ctx.db)
        s.facts = objects.facts(c, stored, capabilities, ctx.clock.now(), kept)
    except ConfigurationError as exc:
        s.failed = exc
        return s
    s.call = partial(stages.STAGES[c.state], s.facts, cluster, ctx.settings)
    return s


def _release(ctx: Context, ids: list[int], owner: str) -> None:
    with ctx.db.transaction() as session:
        session.execute(
            update(schema.Deployment)
            .where(schema.Deployment.id.in_(ids), schema.Deployment.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )


def _record(ctx: Context, owner: str, steps: list[_Step]) -> int:
    with ctx.db.transaction() as session:
        ids = [s.claimed.id for s in steps]
        held = batching.locked(session, ids, [s.claimed.id for s in steps if _reads_related(s)])
        rows = held.rows
        pending = [
            (s.claimed, rows[s.claimed.id])
            for s in steps
            if s.claimed.state is S.PENDING and s.claimed.id in rows
        ]
        environment = admitting.others(session, pending)
        moved = 0
        with events.together(session):
            for s in steps:
                d = rows.get(s.claimed.id)
                if d is None or d.lease_owner != owner:
                    continue  # taken over by another replica (ours had expired): theirs now
                d.lease_owner, d.lease_expires_at = None, None
                if d.state != s.claimed.state.value:
                    continue  # someone else moved it meanwhile (cancel, supersede): drop it
                moved += int(_record_one(ctx, session, s, d, environment))
        return moved


def _reads_related(s: _Step) -> bool:
    """Whether recording the step reads its unit and releases: deciding a pending deployment,
    recording a failure or a cleanup, ending (activating or abandoning a release). Moving a
    stage on or noting a blocker reads the row alone. (A step misjudged here is recorded all
    the same: what it reads loads when touched.)"""
    c, result = s.claimed, s.result
    if c.state is S.PENDING or c.state.is_final or s.failed is not None:
        return True
    if not isinstance(result, Outcome):
        return True
    decision = result.decision
    if decision.step is not Step.MOVE or decision.trigger is None:
        return False
    after = transitions.TABLE.get((c.state, decision.trigger))
    return after is None or after.is_final


def _record_one(
    ctx: Context, session: Session, s: _Step, d: schema.Deployment, environment: admitting.Others
) -> bool:
    c, result = s.claimed, s.result
    if c.state is S.PENDING:
        return _apply(ctx, session, d, admitting.decide(c, d, environment))
    if c.state.is_final:  # an ended release's objects, removed (or kept: it is in use)
        if isinstance(result, Exception) and not isinstance(result, PermanentError):
            return False  # failing for now (or a bug, re-raised): tried again next tick
        refused = result.message if isinstance(result, PermanentError) else None
        return removing.cleaned(session, ctx.clock, d, c.release, refused)
    if isinstance(s.failed, ConfigurationError):
        return failing.not_compilable(ctx, session, d, s.failed)
    if s.failed is not None:
        active = d.unit.active_release
        before = active.name if active is not None and active.id != d.release_id else None
        keeps = messages.keeps_serving(before)
        return failing.failed_call(ctx, session, d, c.state, s.failed, keeps, before)
    assert s.facts is not None
    if isinstance(result, _FAILED_CALL):
        return failing.failed_call(
            ctx, session, d, c.state, result, s.facts.keeps, s.facts.previous
        )
    if not isinstance(result, Outcome):
        return False  # the call raised something else: re-raised once the batch is recorded
    if d.blocker == Blocker.DELIVERY.value:
        d.stage_started_at = ctx.clock.now()  # the outage does not count against the stage
    if result.marker is not None:
        d.stage_marker = result.marker
    return _apply(ctx, session, d, result.decision)


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
