"""From a stored release to what a runtime applies: render its manifests with real secrets.

The renderers are pure and cached by content; this is the one place that feeds them values
from the store (server-side secrets, the database password generated once per environment),
as a batch read them (``batching.Claimed``; secrets decrypted once per environment) or as
a drift check reads one unit's active release (``release_objects``).
"""

from __future__ import annotations

import secrets as random
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy.orm import Session

from reconciler.admin import secrets
from reconciler.admin.secrets import Secrets
from reconciler.context import Context
from reconciler.engine import releases
from reconciler.engine.batching import Claimed
from reconciler.engine.stages import Facts
from reconciler.model.frozen import FrozenRelease
from reconciler.model.specs import DatabaseSpec, ManifestsSpec, ProcessType
from reconciler.runtimes.cluster import CLUSTER_KIND, ProbeKind, ReleaseObjects
from reconciler.store import schema
from reconciler.store.database import Database
from renderers import naming, raw, rendering
from renderers.capabilities import Capabilities
from renderers.manifests import Manifest
from renderers.releases import DatabaseUnit, EnvironmentUnit, ReleaseSpec, Scope, release_spec
from renderers.rendering import Renderer
from renderers.secrets import SecretValues, Sensitive

RENDERS_KEPT = 2048


def _bodies(manifests: tuple[Manifest, ...]) -> tuple[dict[str, Any], ...]:
    """Each manifest's body as the engine's own copy (the renderer's cached ones stay as they
    are whatever happens to it; runtimes copy what they change)."""
    return tuple(_copied(dict(m.body)) for m in manifests)


def _copied(value: Any) -> Any:
    """A copy of a parsed YAML document (mappings, lists and scalars): what ``deepcopy``
    does for these, at a fraction of its cost."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def passwords(session: Session, ctx: Context, batch: list[Claimed], stored: Secrets) -> None:
    """The database password of each database in ``batch``: generated once per environment,
    stored encrypted (in ``stored`` too), never changed across releases."""
    for claimed in batch:
        values = stored.setdefault((claimed.project_id, claimed.environment), {})
        _password(session, ctx, claimed.project_id, claimed.environment, claimed.frozen, values)


def _password(
    session: Session,
    ctx: Context,
    project_id: int,
    environment: str,
    frozen: FrozenRelease,
    values: dict[str, str],
) -> None:
    """A database release's password in ``values``, generated and stored the first time."""
    if not isinstance(frozen.unit, DatabaseSpec):
        return
    key = secrets.DATABASE_PASSWORD.format(name=frozen.unit.name)
    if key not in values:
        values[key] = random.token_urlsafe(24)
        secrets.put(session, ctx.clock, ctx.vault, project_id, environment, key, values[key])


@dataclass(frozen=True)
class _Rendered:
    objects: ReleaseObjects
    downtime: bool  # a volume release: drain the previous release before starting
    stabilization: int  # seconds


class Renders:
    """A store's releases as rendered, most recently used kept: a release is immutable, so
    what it renders to changes only with the cluster's capabilities or the environment's
    secrets, which are part of the key. The stages of one deployment render it once."""

    def __init__(self, size: int = RENDERS_KEPT) -> None:
        self._size = size
        self._kept: OrderedDict[Hashable, _Rendered] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, render: Callable[[], _Rendered]) -> _Rendered:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        found = render()
        with self._lock:
            self._kept[key] = found
            if len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return found


_renders: WeakKeyDictionary[Database, Renders] = WeakKeyDictionary()
_renders_lock = threading.Lock()


def renders(db: Database) -> Renders:
    """The renders kept for ``db`` (release ids are the store's own: one cache per store)."""
    with _renders_lock:
        return _renders.setdefault(db, Renders())


def facts(
    claimed: Claimed,
    stored: dict[str, str],
    capabilities: Capabilities,
    now: datetime,
    kept: Renders,
) -> Facts:
    """Everything a stage needs, from what the batch read (``stored``: the environment's
    decrypted secrets). ``capabilities`` are read from the cluster beforehand, with no
    transaction open: discovery is a network call. Raises ``ConfigurationError`` when a
    secret the release reads is missing."""
    base = _base(claimed.project, claimed.environment, claimed.unit, claimed.release, claimed.image)
    key = (claimed.release_id, capabilities, tuple(sorted(stored.items())))
    rendered = kept.get(
        key, lambda: _render(base, claimed.number, claimed.frozen, stored, capabilities)
    )
    return Facts(
        claimed.id,
        claimed.state,
        claimed.marker,
        rendered.objects,
        claimed.previous,
        rendered.downtime,
        claimed.stage_started,
        timedelta(seconds=rendered.stabilization),
        now,
    )


def release_objects(
    session: Session,
    ctx: Context,
    unit: schema.Unit,
    release: schema.Release,
    capabilities: Capabilities,
) -> ReleaseObjects:
    """Release ``release`` of ``unit`` as a runtime applies it, for a drift check or a diff
    (kept with the deployments' renders); raises ``ConfigurationError`` when it cannot be
    compiled (a missing secret)."""
    env = unit.environment
    project = env.project
    stored = secrets.values(session, ctx.vault, project.id, env.name)
    frozen = releases.frozen(release)
    _password(session, ctx, project.id, env.name, frozen, stored)  # (deployed: it has one)
    base = _base(project.slug, env.name, unit.name, release.name, release.image)
    key = (release.id, capabilities, tuple(sorted(stored.items())))
    rendered = renders(ctx.db).get(
        key, lambda: _render(base, release.number, frozen, stored, capabilities)
    )
    return rendered.objects


def _base(project: str, environment: str, unit: str, release: str, image: str) -> ReleaseObjects:
    namespace = Scope(project, environment).namespace
    return ReleaseObjects(project, environment, namespace, unit, release, image)


def _render(
    base: ReleaseObjects,
    number: int,
    config: FrozenRelease,
    stored: dict[str, str],
    capabilities: Capabilities,
) -> _Rendered:
    scope = Scope(base.project, base.environment)
    render = rendering.renderer(capabilities)
    own = {k: v for k, v in stored.items() if not k.startswith("nebula.")}
    values = SecretValues.of(own, f"{base.project}/{base.environment}")
    spec = config.unit
    unit = EnvironmentUnit(scope, tuple(sorted(own)), spec.platform.pod_security)
    shared = _bodies(render.environment(unit, values))
    if isinstance(spec, DatabaseSpec):
        password = stored[secrets.DATABASE_PASSWORD.format(name=spec.name)]
        objects = _database(render, scope, spec, base, shared, Sensitive(password))
        return _Rendered(objects, False, 0)
    if isinstance(spec, ManifestsSpec):
        # Applied when starting, as written; nothing to wait for once the API server took
        # them (no pods of their own), and no stable Service to move.
        workload = _bodies(raw.documents(spec, scope, number))
        return _Rendered(replace(base, shared=shared, workload=workload), False, 0)
    for name in sorted(config.secret_names):
        values.secret(name)  # raises ConfigurationError if it is missing
    objects = _service(render, release_spec(scope, number, config), base, shared)
    primary = spec.primary_process
    stabilization = primary.stabilization_seconds if primary else 0
    return _Rendered(objects, spec.downtime_accepted, stabilization)


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
        # A CloudNativePG Cluster qualifies on its own status: every instance ready.
        primary_kind=CLUSTER_KIND if spec.cloudnative else "StatefulSet",
        replicas=spec.instances,
    )


# The service's objects beside the stable Service, applied when a release is admitted and
# kept across releases: volume claims, and the routes to the stable Service.
_UNIT_OWNED = frozenset({"PersistentVolumeClaim", "HTTPRoute", "Ingress"})


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
        shared=shared + _bodies(tuple(m for m in per_service if m.kind in _UNIT_OWNED)),
        release_job=_bodies(tuple(job))[0] if job else None,
        workload=_bodies(tuple(m for m in own if not (m.kind == "Job" and m.name == job_name))),
        stable_service=_bodies(tuple(stable))[0] if stable else None,
        primary=naming.deployment(service.name, number, primary.name, True) if primary else None,
        replicas=primary.least_replicas if primary else 0,
        own_service=naming.release_service(service.name, number)
        if primary and primary.port
        else None,
        port=primary.port if primary else None,
        readiness_path=primary.readiness_path if primary else "/",
        probe=probe,
        release_command_timeout=service.release_command_timeout,
    )
