"""One domain, one route on a cluster: a change set that would route a domain another
environment already routes there is not applied (behaviour.md "Public traffic (1.2)").

Checked when a change set is applied, not when a file is validated: whether a domain is taken
depends on what other projects run now, which no single file knows. "Routes" means the active
releases' routes and those of releases being deployed; environments on other clusters may
route the same name (a staging cluster may mirror production's domains). Applying runs in one
transaction per change set, so two applies at once could still both pass on PostgreSQL with
several replicas: a narrow window, noted.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.core.states import ServiceKind
from reconciler.model.frozen import FrozenRelease
from reconciler.model.specs import EnvironmentConfig, ServiceSpec
from reconciler.store import schema


def routed(config: EnvironmentConfig) -> set[str]:
    if not config.environment.platform.routed:
        return set()
    return {d for s in config.services for p in s.processes for d in p.domains}


def claimed(session: Session, env: schema.Environment, config: EnvironmentConfig) -> str | None:
    """Why the change set cannot route its domains, or None."""
    wanted = routed(config)
    if not wanted:
        return None
    cluster = _cluster(env)
    units = session.scalars(
        select(schema.Unit)
        .where(
            schema.Unit.environment_id != env.id,
            schema.Unit.kind == ServiceKind.SERVICE.value,
            schema.Unit.status != "removed",
            schema.Unit.active_release_id.is_not(None),
        )
        .order_by(schema.Unit.id)
    )
    # What runs, and what is on its way (a deployment not finished: applied, or awaiting
    # its approval), so that two change sets applied one after the other cannot both route it.
    pending = session.execute(
        select(schema.Deployment.environment_id, schema.Release)
        .join(schema.Release, schema.Release.id == schema.Deployment.release_id)
        .where(
            schema.Deployment.environment_id != env.id,
            schema.Deployment.finished_at.is_(None),
        )
        .order_by(schema.Deployment.id)
    ).all()
    candidates: list[tuple[schema.Environment | None, schema.Release]] = [
        (u.environment, u.active_release) for u in units if u.active_release
    ]
    candidates += [(session.get(schema.Environment, e), r) for e, r in pending]
    for other, release in candidates:
        if other is None or _cluster(other) != cluster:
            continue
        spec = FrozenRelease.from_storage(release.config).unit
        if not isinstance(spec, ServiceSpec) or not spec.platform.routed:
            continue
        taken = sorted(wanted & {d for p in spec.processes for d in p.domains})
        if taken:
            return f"{taken[0]} is already routed by {other.project.slug}/{other.name}."
    return None


def _cluster(env: schema.Environment) -> str | None:
    """The kubeconfig context the environment deploys to (None: the default one)."""
    context = (env.project.clusters or {}).get(env.name)
    return str(context) if context else None
