"""Removing what no longer serves: a release that ended without taking traffic, and a unit
taken out of nebula.toml (torn down by label, idempotently; ``pending-teardown`` while the
cluster cannot be reached).

The cluster is called with no transaction open: a runtime may use the database too.
"""

from __future__ import annotations

from sqlalchemy import select

from reconciler.context import Context
from reconciler.core.states import ReleaseStatus, ServiceStatus, StageMarker
from reconciler.engine import recording, releases
from reconciler.errors import PermanentError, TransientError
from reconciler.store import events, schema
from reconciler.store.events import EventKind


def cleanup(ctx: Context, deployment_id: int) -> bool:
    """Remove the objects of a release that ended without taking traffic.

    The cluster is called with no transaction open (a runtime may use the database too)."""
    with ctx.db.transaction() as session:
        d = session.get(schema.Deployment, deployment_id)
        if d is None or d.stage_marker != StageMarker.CLEANUP:
            return False
        in_use = d.unit.active_release_id == d.release_id or any(
            o.release_id == d.release_id and o.id != d.id
            for o in recording.open_for_unit(session, d.unit_id)
        )
        cluster = ctx.cluster(d.environment)
        namespace, unit, release = d.environment.namespace, d.unit.name, d.release.name
    refused: str | None = None
    if not in_use:
        try:
            # A refused activation may have landed after all: never remove what serves.
            if cluster.selected_release(namespace, unit) != release:
                cluster.remove(namespace, unit, release)
        except TransientError:
            return False  # try again next tick
        except PermanentError as exc:  # refused for good (e.g. 403): say so, stop trying
            refused = exc.message
    with ctx.db.transaction() as session:
        d = session.get(schema.Deployment, deployment_id)
        if d is None or d.stage_marker != StageMarker.CLEANUP:
            return False
        d.stage_marker = None
        if not in_use and refused is not None:
            events.deployment(
                session,
                ctx.clock.now(),
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
