"""Removing what no longer serves: a release that ended without taking traffic, and a unit
taken out of nebula.toml (torn down by label, idempotently; ``pending-teardown`` while the
cluster cannot be reached).

The cluster is called with no transaction open: a runtime may use the database too.
"""

from __future__ import annotations

from sqlalchemy import select

from reconciler.context import Context
from reconciler.core.states import ReleaseStatus, ServiceStatus
from reconciler.engine import objects, recording, releases
from reconciler.errors import PermanentError, TransientError
from reconciler.store import events, schema


def cleanup(ctx: Context, deployment_id: int) -> bool:
    """Remove the objects of a release that ended without taking traffic.

    The cluster is called with no transaction open (a runtime may use the database too)."""
    with ctx.db.transaction() as session:
        d = session.get(schema.Deployment, deployment_id)
        if d is None or d.stage_marker != "cleanup":
            return False
        in_use = d.unit.active_release_id == d.release_id or any(
            o.release_id == d.release_id and o.id != d.id
            for o in recording.open_for_unit(session, d.unit_id)
        )
        cluster = objects.cluster_for(ctx, d)
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
        if d is None or d.stage_marker != "cleanup":
            return False
        d.stage_marker = None
        if not in_use and refused is not None:
            events.record(
                session,
                ctx.clock.now(),
                "deployment.cleanup",
                project_id=d.project_id,
                environment_id=d.environment_id,
                deployment_id=d.id,
                state=d.state,
                message=f"Could not remove {release}'s objects: {refused}",
            )
        return True


def teardown(ctx: Context, unit_id: int) -> bool:
    with ctx.db.transaction() as session:
        unit = session.get(schema.Unit, unit_id)
        if unit is None or unit.status != ServiceStatus.PENDING_TEARDOWN.value:
            return False
        env = unit.environment
        cluster = ctx.clusters.for_environment(env.project.clusters, env.name)
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
        events.record(
            session,
            ctx.clock.now(),
            "unit",
            project_id=unit.project_id,
            environment_id=unit.environment_id,
            state=ServiceStatus.REMOVED.value,
            message=f"{unit.name} torn down" + (" (already clean)" if result.already_clean else ""),
        )
        return True
