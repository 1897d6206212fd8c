"""From a stored release to what a runtime applies: render its manifests with real secrets.

The renderers are pure and cached by content; this is the one place that feeds them values
from the store (server-side secrets, the database password generated once per environment).
"""

from __future__ import annotations

import copy
import secrets as random
from dataclasses import replace
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from reconciler.admin import secrets
from reconciler.context import Context
from reconciler.core.states import DeploymentState, StageMarker
from reconciler.engine import releases
from reconciler.engine.stages import Facts
from reconciler.model.specs import DatabaseSpec, ProcessType, ServiceSpec
from reconciler.runtimes.cluster import ProbeKind, ReleaseObjects
from reconciler.store import schema
from renderers import naming, rendering
from renderers.capabilities import Capabilities
from renderers.manifests import Manifest
from renderers.releases import DatabaseUnit, EnvironmentUnit, ReleaseSpec, Scope, release_spec
from renderers.rendering import Renderer
from renderers.secrets import SecretValues, Sensitive


def _bodies(manifests: tuple[Manifest, ...]) -> tuple[dict[str, Any], ...]:
    return tuple(copy.deepcopy(dict(m.body)) for m in manifests)


def database_password(
    session: Session, ctx: Context, project_id: int, environment: str, name: str
) -> str:
    """Generated once per environment, stored encrypted, never changed across releases."""
    key = secrets.DATABASE_PASSWORD.format(name=name)
    stored = secrets.values(session, ctx.vault, project_id, environment)
    if key not in stored:
        stored[key] = random.token_urlsafe(24)
        secrets.put(session, ctx.clock, ctx.vault, project_id, environment, key, stored[key])
    return stored[key]


def facts(
    session: Session, ctx: Context, d: schema.Deployment, capabilities: Capabilities
) -> Facts:
    """Everything a stage needs. ``capabilities`` are read from the cluster beforehand, with no
    transaction open: discovery is a network call."""
    objects = release_objects(session, ctx, d.unit, d.release, capabilities)
    spec = releases.frozen(d.release).unit
    downtime, stabilization = False, 0
    if isinstance(spec, ServiceSpec):
        primary = spec.primary_process
        downtime = spec.downtime_accepted
        stabilization = primary.stabilization_seconds if primary else 0
    active = d.unit.active_release
    return Facts(
        d.id,
        DeploymentState(d.state),
        StageMarker(d.stage_marker) if d.stage_marker else None,
        objects,
        active.name if active is not None and active.id != d.release_id else None,
        downtime,
        d.stage_started_at or d.created_at,
        timedelta(seconds=stabilization),
        ctx.clock.now(),
    )


def release_objects(
    session: Session,
    ctx: Context,
    unit: schema.Unit,
    release: schema.Release,
    capabilities: Capabilities,
) -> ReleaseObjects:
    """Release ``release`` of ``unit`` as a runtime applies it (a deployment's stages, a drift
    check); raises ``ConfigurationError`` when it cannot be compiled (a missing secret)."""
    env = unit.environment
    project = env.project
    scope = Scope(project.slug, env.name)
    render = rendering.renderer(capabilities)
    frozen = releases.frozen(release)
    base = ReleaseObjects(
        project=project.slug,
        environment=env.name,
        namespace=scope.namespace,
        unit=unit.name,
        release=release.name,
        image=release.image,
    )
    stored = {
        k: v
        for k, v in secrets.values(session, ctx.vault, project.id, env.name).items()
        if not k.startswith("nebula.")
    }
    values = SecretValues.of(stored, f"{project.slug}/{env.name}")
    shared = _bodies(render.environment(EnvironmentUnit(scope, tuple(sorted(stored))), values))
    spec = frozen.unit
    if isinstance(spec, DatabaseSpec):
        password = database_password(session, ctx, project.id, env.name, spec.name)
        return _database(render, scope, spec, base, shared, Sensitive(password))
    for name in sorted(frozen.secret_names):
        values.secret(name)  # raises ConfigurationError if it is missing
    return _service(render, release_spec(scope, release.number, frozen), base, shared)


def _database(
    render: Renderer,
    scope: Scope,
    spec: DatabaseSpec,
    base: ReleaseObjects,
    shared: tuple[dict[str, Any], ...],
    password: Sensitive,
) -> ReleaseObjects:
    rendered = render.database(DatabaseUnit(scope, spec), password)
    return replace(
        base,
        is_database=True,
        shared=shared + _bodies(tuple(m for m in rendered if m.kind == "Secret")),
        workload=_bodies(tuple(m for m in rendered if m.kind != "Secret")),
        primary=spec.name,
        primary_kind="StatefulSet",
        replicas=1,
    )


def _service(
    render: Renderer, spec: ReleaseSpec, base: ReleaseObjects, shared: tuple[dict[str, Any], ...]
) -> ReleaseObjects:
    own = render.release(spec)
    per_service = render.service(spec)
    service, number = spec.service, spec.number
    job_name = naming.release_job(service.name, number)
    primary = service.primary_process
    probe = ProbeKind.NONE
    if primary is not None and primary.type is ProcessType.HTTP:
        probe = ProbeKind.HTTP
    elif primary is not None and primary.port is not None:
        probe = ProbeKind.TCP
    stable = [m for m in per_service if m.kind == "Service"]
    job = [m for m in own if m.kind == "Job" and m.name == job_name]
    return replace(
        base,
        shared=shared + _bodies(tuple(m for m in per_service if m.kind == "PersistentVolumeClaim")),
        release_job=_bodies(tuple(job))[0] if job else None,
        workload=_bodies(tuple(m for m in own if not (m.kind == "Job" and m.name == job_name))),
        stable_service=_bodies(tuple(stable))[0] if stable else None,
        primary=naming.deployment(service.name, number, primary.name, True) if primary else None,
        replicas=primary.replicas if primary else 0,
        own_service=naming.release_service(service.name, number)
        if primary and primary.port
        else None,
        port=primary.port if primary else None,
        readiness_path=primary.readiness_path if primary else "/",
        probe=probe,
        release_command_timeout=service.release_command_timeout,
    )
