"""Live state: each unit's active release compared with what runs, drift recorded once per
episode, and self-heal.

A check of one unit is short transactions around the cluster calls, never one held open
across a network call (as a deployment's step):

1. read the unit and render its active release's objects (``objects.release_objects``);
2. read them live (``Cluster.live``) and compare (``core.drifts``, the same for every runtime);
3. with ``self_heal`` on and neither the project nor the environment suspended, apply the
   drifted objects again (``Cluster.heal``) and read them once more;
4. record, under the unit's row lock: ``sync``, the drift list and the time of the check; one
   ``Drift:`` event and one Slack notice when an episode begins, ``Self-heal: ...`` for what was
   put back, ``Drift cleared`` when it ends. Events are the unit's, actor ``nebula``.

A unit is due when its last check is older than ``NEBULA_DRIFT_INTERVAL`` or it has none (a
deployment that goes healthy clears it), and never while a deployment of it is in flight: the
deployment owns the objects then. A result read just before a deployment began is dropped, not
recorded, and nothing is healed once one has. A cluster that cannot be read makes ``sync``
``unknown`` with the ``delivery`` blocker; an episode already open stays open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Exists, exists, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.sql.elements import ColumnElement

from notifiers import notices
from reconciler.admin import projects
from reconciler.context import Context
from reconciler.core import drifts, messages
from reconciler.core.drifts import Drift
from reconciler.core.states import IN_FLIGHT_STATES, AdminAction, Blocker, ServiceStatus, Sync
from reconciler.engine import objects as release_objects
from reconciler.errors import ConfigurationError, NebulaError, NotFoundError, RemoteError
from reconciler.runtimes.cluster import (
    Cluster,
    Live,
    ReleaseObjects,
    checked,
    replicas_by_process,
)
from reconciler.store import events, schema
from reconciler.store.events import EventKind

log = logging.getLogger("nebula.drift")
ACTOR = "nebula"


@dataclass(frozen=True)
class Inspection:
    """One unit's active release against what runs: what ``nebula diff`` shows."""

    environment: str
    unit: str
    release: str
    drift: tuple[Drift, ...]
    diffs: tuple[str, ...]  # a unified diff per object that differs, in the release's order

    @property
    def sync(self) -> Sync:
        return Sync.DRIFTED if self.drift else Sync.SYNCED

    def to_json(self) -> dict[str, Any]:
        """The drift list (the contract's entries) and the unified diff of live vs release."""
        return {
            "environment": self.environment,
            "service": self.unit,
            "release": self.release,
            "sync": self.sync.value,
            "drift": [d.to_json() for d in self.drift],
            "diff": "".join(self.diffs),
        }


@dataclass
class _Check:
    """What one check learnt, in order."""

    unit_id: int
    release_id: int
    release: str = ""
    objects: ReleaseObjects | None = None
    found: tuple[Drift, ...] = ()
    healed: tuple[Drift, ...] = ()
    after: tuple[Drift, ...] = ()
    error: NebulaError | None = None
    failed: str = ""  # what could not be done, when ``error``
    heal: bool = False
    cluster: Cluster | None = field(default=None, repr=False)
    scaled: dict[str, int] | None = None  # autoscaled processes' live replicas


# -- which units ----------------------------------------------------------------------------


def _deploying(unit_id: int | ColumnElement[int] | InstrumentedAttribute[int]) -> Exists:
    """A deployment of the unit is in flight (it owns the unit's objects until it ends)."""
    return exists(
        select(schema.Deployment.id).where(
            schema.Deployment.unit_id == unit_id,
            schema.Deployment.finished_at.is_(None),
            schema.Deployment.state.in_(IN_FLIGHT_STATES),
        )
    )


def in_flight(session: Session, unit_id: int) -> bool:
    return bool(session.scalar(select(_deploying(unit_id))))


def due(ctx: Context, session: Session, project: str | None = None) -> list[int]:
    """Units whose active release is due a check: checked longer than the interval ago (or
    never), and no deployment of them in flight."""
    unit = schema.Unit
    query = select(unit.id).where(
        unit.status == ServiceStatus.ACTIVE.value,
        unit.active_release_id.is_not(None),
        or_(
            unit.drift_checked_at.is_(None),
            unit.drift_checked_at <= ctx.clock.now() - ctx.settings.drift_interval,
        ),
        ~_deploying(unit.id),
    )
    if project is not None:
        query = query.join(schema.Project, schema.Project.id == unit.project_id).where(
            schema.Project.slug == project
        )
    return list(session.scalars(query.order_by(unit.drift_checked_at, unit.id)))


def check_due(
    ctx: Context, project: str | None = None, *, stopping: Callable[[], bool] = lambda: False
) -> int:
    """Check every unit that is due (until ``stopping()``); returns how many were checked."""
    with ctx.db.transaction() as session:
        ids = due(ctx, session, project)
    checked = 0
    for unit_id in ids:
        if stopping():
            break
        checked += check(ctx, unit_id) is not None
    return checked


# -- one check --------------------------------------------------------------------------------


def check(ctx: Context, unit_id: int) -> Sync | None:
    """Check one unit now (None when it has nothing to check or a deployment is in flight)."""
    state = _prepare(ctx, unit_id)
    if state is None:
        return None
    if state.error is None:
        _observe(state)
    if state.found and state.heal:
        _heal(ctx, state)
    with ctx.db.transaction() as session:
        return _record(ctx, session, state)


def _prepare(ctx: Context, unit_id: int) -> _Check | None:
    with ctx.db.transaction() as session:
        unit = session.get(schema.Unit, unit_id)
        if unit is None or unit.active_release_id is None or in_flight(session, unit_id):
            return None
        state = _Check(unit_id, unit.active_release_id)
        env = unit.environment
        state.cluster = ctx.cluster(env)
        state.heal = bool(env.self_heal) and projects.suspended(env) is None
    try:  # a network call on first use: never inside a transaction
        capabilities = state.cluster.capabilities()
    except RemoteError as exc:
        state.error, state.failed = exc, "Could not read the cluster:"
        return state
    with ctx.db.transaction() as session:
        unit = session.get(schema.Unit, unit_id)
        if unit is None or unit.active_release is None:
            return None
        state.release = unit.active_release.name
        try:
            state.objects = release_objects.release_objects(
                session, ctx, unit, unit.active_release, capabilities
            )
        except ConfigurationError as exc:
            state.error, state.failed = exc, f"Could not render {state.release}:"
    return state


def _observe(state: _Check) -> None:
    assert state.cluster is not None and state.objects is not None
    try:
        live = state.cluster.live(state.objects)
    except RemoteError as exc:
        state.error, state.failed = exc, f"Could not read the live objects of {state.release}:"
    else:
        state.found = compare(state.objects, live)
        state.scaled = autoscaled_counts(state.objects, live)
    state.after = state.found


def _heal(ctx: Context, state: _Check) -> None:
    """Apply the drifted objects again, unless a deployment began meanwhile."""
    assert state.cluster is not None and state.objects is not None
    with ctx.db.transaction() as session:
        unit = session.get(schema.Unit, state.unit_id)
        if unit is None or unit.active_release_id != state.release_id:
            return
        if in_flight(session, state.unit_id):
            return
    refs = list(dict.fromkeys(d.object for d in state.found))
    try:
        state.cluster.heal(state.objects, refs)
    except RemoteError as exc:
        log.warning(
            "self-heal failed",
            extra={
                "unit": state.objects.unit,
                "namespace": state.objects.namespace,
                "reason": str(exc),
            },
        )
        state.error, state.failed = exc, "Self-heal could not apply the drifted objects again:"
        return
    state.healed = state.found
    try:
        state.after = compare(state.objects, state.cluster.live(state.objects))
    except RemoteError as exc:
        state.error, state.failed = (
            exc,
            "Applied the drifted objects again, but could not read them back:",
        )


def compare(objects: ReleaseObjects, live: Live) -> tuple[Drift, ...]:
    """Every difference between the release's checked objects and what runs."""
    return tuple(
        d
        for manifest in checked(objects)
        for d in drifts.compare(manifest, live.get(drifts.reference(manifest)))
    )


def autoscaled_counts(objects: ReleaseObjects, live: Live) -> dict[str, int] | None:
    """Each autoscaled process's live replica count (what its autoscaler chose), or None
    when the release autoscales nothing."""
    found = [
        live_object
        for manifest in checked(objects)
        if drifts.autoscaled(manifest)
        and (live_object := live.get(drifts.reference(manifest))) is not None
    ]
    return replicas_by_process(found) if found else None


def _record(ctx: Context, session: Session, state: _Check) -> Sync | None:
    unit = session.get(schema.Unit, state.unit_id, with_for_update=True)
    if unit is None or unit.active_release_id != state.release_id:
        return None  # a new release went active meanwhile: this result is about the old one
    if in_flight(session, state.unit_id) and not state.healed:
        return None  # a deployment began meanwhile: it owns the objects now
    now = ctx.clock.now()
    unit.drift_checked_at = now
    if state.error is None:
        unit.scaled = state.scaled
    if state.found and unit.drift_since is None:
        unit.drift_since = now
        events.unit(
            session,
            now,
            unit,
            messages.drift_found(state.found, state.release),
            actor=ACTOR,
            kind=EventKind.DRIFT,
            action=AdminAction.DRIFT,
        )
        healed = messages.self_healed(state.healed) if state.healed else None
        notices.unit_drifted(session, ctx.clock, unit, state.release, state.found, healed)
    if state.healed:
        events.unit(
            session,
            now,
            unit,
            messages.self_healed(state.healed),
            actor=ACTOR,
            kind=EventKind.SELF_HEAL,
            action=AdminAction.SELF_HEAL,
        )
    if state.error is not None:
        unit.sync = Sync.UNKNOWN.value
        unit.sync_blocker = (
            Blocker.CONFIGURATION.value
            if isinstance(state.error, ConfigurationError)
            else Blocker.DELIVERY.value
        )
        unit.sync_message = f"{state.failed} {state.error.message}"
        if state.found:
            unit.drift = [d.to_json() for d in state.found]
        return Sync.UNKNOWN
    unit.sync_blocker = unit.sync_message = None
    unit.drift = [d.to_json() for d in state.after]
    if state.after:
        unit.sync = Sync.DRIFTED.value
        return Sync.DRIFTED
    unit.sync = Sync.SYNCED.value
    if unit.drift_since is not None:
        notices.drift_cleared(session, ctx.clock, unit, state.release)
        unit.drift_since = None
        events.unit(
            session,
            now,
            unit,
            messages.DRIFT_CLEARED,
            actor=ACTOR,
            kind=EventKind.DRIFT,
            action=AdminAction.DRIFT_CLEARED,
        )
    return Sync.SYNCED


# -- nebula diff --------------------------------------------------------------------------------


def inspect(
    ctx: Context, slug: str, environment: str | None = None, service: str | None = None
) -> list[Inspection]:
    """Every unit of ``slug`` with an active release (filtered), read live now and compared;
    nothing is recorded. Raises the cluster's errors (``delivery``), and ``NotFoundError`` for
    a project, environment or service that does not exist (one not deployed yet has nothing
    to compare: it is left out)."""
    with ctx.db.transaction() as session:
        project = projects.get(session, slug)
        envs = (
            [projects.environment(session, project, environment)]
            if environment
            else list(project.environments)
        )
        wanted: list[tuple[int, Cluster]] = []
        known = False
        for env in envs:
            units = list(projects.units(session, env).values())
            if service is not None:
                units = [u for u in units if u.name == service]
            known = known or bool(units)
            wanted += [
                (u.id, ctx.cluster(env))
                for u in sorted(units, key=lambda u: (u.kind != "database", u.name))
                if u.active_release_id is not None  # nothing runs yet: nothing to compare
            ]
        if service is not None and not known:
            where = f" in {environment}" if environment else ""
            raise NotFoundError(f"No service or database '{service}'{where} in project '{slug}'")
    out = []
    for unit_id, cluster in wanted:
        capabilities = cluster.capabilities()
        with ctx.db.transaction() as session:
            unit = session.get(schema.Unit, unit_id)
            assert unit is not None and unit.active_release is not None
            release = unit.active_release.name
            env_name = unit.environment.name
            objects = release_objects.release_objects(
                session, ctx, unit, unit.active_release, capabilities
            )
        live = cluster.live(objects)
        found = compare(objects, live)
        diffs = tuple(
            text
            for manifest in checked(objects)
            if (text := drifts.unified(manifest, live.get(drifts.reference(manifest)), release))
        )
        out.append(Inspection(env_name, objects.unit, release, found, diffs))
    return out
