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
from reconciler.core.states import DeploymentState
from reconciler.engine import releases
from reconciler.engine.stages import Facts
from reconciler.model.specs import DatabaseSpec, ProcessType, ServiceSpec
from reconciler.runtimes.cluster import Cluster, ProbeKind, ReleaseObjects
from reconciler.store import schema
from renderers import naming
from renderers.capabilities import RECENT, Capabilities
from renderers.manifests import Manifest
from renderers.releases import DatabaseUnit, EnvironmentUnit, ReleaseSpec, Scope
from renderers.rendering import Renderer
from renderers.secrets import SecretValues, Sensitive

_RENDERERS: dict[Capabilities, Renderer] = {}


def renderer(capabilities: Capabilities = RECENT) -> Renderer:
    if capabilities not in _RENDERERS:
        _RENDERERS[capabilities] = Renderer(capabilities)
    return _RENDERERS[capabilities]


def cluster_for(ctx: Context, d: schema.Deployment) -> Cluster:
    env = d.environment
    if ctx.clusters is None:
        from reconciler.runtimes.registry import Clusters

        ctx.clusters = Clusters(ctx.settings, ctx.db, ctx.clock)
    cluster: Cluster = ctx.clusters.for_environment(env.project.clusters, env.name)
    return cluster


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
    env = d.environment
    project = env.project
    scope = Scope(project.slug, env.name)
    render = renderer(capabilities)
    spec = releases.spec_of(d.release)
    active = d.unit.active_release
    previous = active.name if active is not None and active.id != d.release_id else None
    base = ReleaseObjects(
        project=project.slug,
        environment=env.name,
        namespace=scope.namespace,
        unit=d.unit.name,
        release=d.release.name,
        image=d.release.image,
    )
    stored = {
        k: v
        for k, v in secrets.values(session, ctx.vault, project.id, env.name).items()
        if not k.startswith("nebula.")
    }
    env_objects = render.environment(
        EnvironmentUnit(scope, tuple(sorted(stored))),
        SecretValues.of(stored, f"{project.slug}/{env.name}"),
    )
    if isinstance(spec, DatabaseSpec):
        password = database_password(session, ctx, project.id, env.name, spec.name)
        rendered = render.database(DatabaseUnit(scope, spec), Sensitive(password))
        objects = replace(
            base,
            is_database=True,
            shared=_bodies(env_objects) + _bodies(tuple(m for m in rendered if m.kind == "Secret")),
            workload=_bodies(tuple(m for m in rendered if m.kind != "Secret")),
            primary=spec.name,
            primary_kind="StatefulSet",
            replicas=1,
        )
        return Facts(
            d.id,
            _state(d),
            d.stage_marker,
            objects,
            previous,
            False,
            d.stage_started_at or d.created_at,
            _seconds(0),
            ctx.clock.now(),
        )
    assert isinstance(spec, ServiceSpec)
    for name in sorted(releases.secret_names(d.release)):
        SecretValues.of(stored, f"{project.slug}/{env.name}").secret(name)  # raises if missing
    config = d.release.config
    release_spec = ReleaseSpec(
        scope=scope,
        service=spec,
        number=d.release.number,
        variables=tuple(
            (k, releases.segments_from_json(v)) for k, v in config.get("variables", [])
        ),
        ports=tuple(sorted((k, v) for k, v in config.get("ports", {}).items())),
    )
    own = render.release(release_spec)
    per_service = render.service(release_spec)
    job_name = naming.release_job(spec.name, d.release.number)
    primary = spec.primary_process
    probe = ProbeKind.NONE
    if primary is not None and primary.type is ProcessType.HTTP:
        probe = ProbeKind.HTTP
    elif primary is not None and primary.port is not None:
        probe = ProbeKind.TCP
    stable = [m for m in per_service if m.kind == "Service"]
    job = [m for m in own if m.kind == "Job" and m.name == job_name]
    objects = replace(
        base,
        shared=_bodies(env_objects)
        + _bodies(tuple(m for m in per_service if m.kind == "PersistentVolumeClaim")),
        release_job=_bodies(tuple(job))[0] if job else None,
        workload=_bodies(tuple(m for m in own if not (m.kind == "Job" and m.name == job_name))),
        stable_service=_bodies(tuple(stable))[0] if stable else None,
        primary=naming.deployment(spec.name, d.release.number, primary.name, True)
        if primary
        else None,
        replicas=primary.replicas if primary else 0,
        own_service=naming.release_service(spec.name, d.release.number)
        if primary and primary.port
        else None,
        port=primary.port if primary else None,
        readiness_path=primary.readiness_path if primary else "/",
        probe=probe,
        release_command_timeout=spec.release_command_timeout,
    )
    return Facts(
        d.id,
        _state(d),
        d.stage_marker,
        objects,
        previous,
        spec.downtime_accepted,
        d.stage_started_at or d.created_at,
        _seconds(primary.stabilization_seconds if primary else 0),
        ctx.clock.now(),
    )


def _state(d: schema.Deployment) -> DeploymentState:
    return DeploymentState(d.state)


def _seconds(n: int) -> timedelta:
    return timedelta(seconds=n)
