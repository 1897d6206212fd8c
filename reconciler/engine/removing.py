"""Removing what no longer serves: a release that ended without taking traffic, and a unit
taken out of nebula.toml (torn down by label, idempotently; ``pending-teardown`` while the
cluster cannot be reached).

The cluster is called with no transaction open: a runtime may use the database too. An
ended release's cleanup is one step of a tick's batch (read, called, recorded with the rest);
a teardown takes its own transactions (rare: a unit taken out of the file).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.context import Context
from reconciler.core.states import OPEN_STATES, ReleaseStatus, ServiceStatus, StageMarker
from reconciler.engine import releases
from reconciler.engine.batching import Claimed
from reconciler.errors import TransientError
from reconciler.runtimes.cluster import Cluster
from reconciler.store import events, schema
from reconciler.store.events import EventKind


def in_use(session: Session, batch: list[Claimed]) -> set[int]:
    """Of the ended deployments in ``batch``, those whose release still serves or is what
    another open deployment deploys: their objects stay (one query for the batch)."""
    units = {c.unit_id for c in batch}
    if not units:
        return set()
    others = session.execute(
        select(schema.Deployment.id, schema.Deployment.release_id).where(
            schema.Deployment.unit_id.in_(units), schema.Deployment.state.in_(OPEN_STATES)
        )
    ).all()
    return {
        c.id
        for c in batch
        if c.active_id == c.release_id
        or any(release == c.release_id and other != c.id for other, release in others)
    }


def remove_unserved(cluster: Cluster, claimed: Claimed) -> None:
    """Remove the objects of a release that ended without taking traffic, on the cluster:
    a refused activation may have landed after all, so never what the stable Service selects.
    Raises ``TransientError`` to be tried again, ``PermanentError`` when refused for good."""
    if cluster.selected_release(claimed.namespace, claimed.unit) != claimed.release:
        cluster.remove(claimed.namespace, claimed.unit, claimed.release)


def cleaned(
    session: Session, clock: Clock, d: schema.Deployment, release: str, refused: str | None
) -> bool:
    """Record the cleanup done (or refused for good: said once, not tried again)."""
    if d.stage_marker != StageMarker.CLEANUP:
        return False
    d.stage_marker = None
    if refused is not None:
        events.deployment(
            session,
            clock.now(),
            d,
            f"Could not remove {release}'s objects: {refused}",
            kind=EventKind.DEPLOYMENT_CLEANUP,
        )
    return True


def teardown(ctx: Context, unit_id: int) -> bool:
    with ctx.db.transaction() as session:
        unit = session.get(schema.Unit, unit_id)
        if unit is None or unit.status != ServiceStatus.PENDING_TEARDOWN.value:
            return False
        env = unit.environment
        cluster = ctx.cluster(env)
        namespace, name = env.namespace, unit.name
    try:
        result = cluster.teardown(namespace, name)
    except TransientError:
        return False  # stays pending-teardown until the cluster is back
    with ctx.db.transaction() as session:
        unit = session.get(schema.Unit, unit_id)
        if unit is None or unit.status != ServiceStatus.PENDING_TEARDOWN.value:
            return False
        unit.status = ServiceStatus.REMOVED.value
        unit.active_release_id = None
        for release in session.scalars(
            select(schema.Release).where(schema.Release.unit_id == unit.id)
        ):
            releases.abandon(release)
            if release.status == ReleaseStatus.ACTIVE.value:  # nothing serves it any more
                release.status = ReleaseStatus.RETIRED.value
                release.retired_at = ctx.clock.now()
        clean = " (already clean)" if result.already_clean else ""
        events.unit(session, ctx.clock.now(), unit, f"{unit.name} torn down{clean}")
        return True
