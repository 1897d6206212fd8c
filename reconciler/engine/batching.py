"""Claiming a batch of due deployments in one statement, and reading what their steps need
in a constant number of queries, however many deployments the batch holds.

A claim is one ``UPDATE ... WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)``: on
PostgreSQL a row another replica is locking right now is skipped, not waited for; SQLite has
one writer, so the write lock the transaction takes first already makes the claim exclusive.
Each claimed row gets this replica's lease (with an expiry, so a killed replica's work is
taken over). What a step reads of its deployment (unit, environment, project, releases, the
environment's secrets) comes from one joined query and one query of secrets for the batch;
the transaction that records the batch locks its rows again in one query (``locked``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from sqlalchemy import ARRAY, Integer, and_, any_, bindparam, or_, select, union_all, update
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased, defer
from sqlalchemy.sql.elements import ColumnElement

from reconciler.core.states import IN_FLIGHT_STATES, DeploymentState, StageMarker
from reconciler.model.frozen import FrozenRelease
from reconciler.store import schema

D = schema.Deployment
LEASE = timedelta(seconds=60)
RENEW = timedelta(seconds=20)  # how often the leases of a batch whose calls still run are renewed
SIZE = 100  # deployments a tick claims at once

# What a tick looks for, as two conditions so each can use an index: deployments in flight
# (``finished_at IS NULL``: ix_deployments_open) and ended ones whose pods are still to be
# removed (ix_deployments_marker). Neither grows with the history of finished deployments.
IN_FLIGHT = and_(D.finished_at.is_(None), D.state.in_(IN_FLIGHT_STATES))
CLEANUP = D.stage_marker == StageMarker.CLEANUP


@dataclass(frozen=True)
class Claimed:
    """A claimed deployment as its step needs it, read with its neighbours in one query."""

    id: int
    state: DeploymentState
    marker: StageMarker | None
    project_id: int
    project: str  # the slug
    contexts: dict[str, str]  # the project's kubeconfig context per environment
    environment_id: int
    environment: str
    unit_id: int
    unit: str
    release_id: int
    number: int
    image: str
    config: dict[str, Any]  # the release's frozen configuration, as stored
    active_id: int | None  # the unit's active release
    active_number: int | None
    stage_started: datetime
    waiting_on: int | None

    @cached_property
    def frozen(self) -> FrozenRelease:
        """The release's frozen configuration, as a value (read once per step)."""
        return FrozenRelease.from_storage(self.config)

    @property
    def namespace(self) -> str:
        return f"{self.project}-{self.environment}"

    @property
    def release(self) -> str:
        return f"r-{self.number}"

    @property
    def previous(self) -> str | None:
        """The release serving before this deployment (None when it is this one or none)."""
        if self.active_id is None or self.active_id == self.release_id:
            return None
        return f"r-{self.active_number}"


def _among(
    session: Session, column: InstrumentedAttribute[Any], ids: Iterable[int | None]
) -> ColumnElement[bool]:
    """``column IN ids``. On PostgreSQL, ``column = ANY(:ids)``: one array parameter, so a
    batch's statement is the same text whatever its ids, prepared once by the driver, where
    a hundred parameters made it a new statement to parse on both sides each time."""
    values = [i for i in ids if i is not None]
    if session.get_bind().dialect.name == "postgresql":
        return column == any_(bindparam(None, values, type_=ARRAY(Integer)))
    return column.in_(values)


# The rows a claim selects, under another name than the table the claim updates (so the
# subquery is not correlated to the UPDATE).
_CLAIMED = aliased(D, name="claimed")


def _due(now: datetime) -> ColumnElement[bool]:
    """In flight and not backing off before a retry, or ended with objects left to remove."""
    waited = or_(D.next_attempt_at.is_(None), D.next_attempt_at <= now)
    return _CLAIMED.id.in_(
        union_all(select(D.id).where(IN_FLIGHT, waited), select(D.id).where(CLEANUP))
    )


def claimable(owner: str, now: datetime, rows: Any = D) -> ColumnElement[bool]:
    """Free, ours, or expired (its holder died)."""
    held = rows.lease_owner
    return or_(held.is_(None), held == owner, rows.lease_expires_at < now)


def claim(
    session: Session,
    owner: str,
    now: datetime,
    *,
    sqlite: bool,
    after: int = 0,
    limit: int = SIZE,
    project: str | None = None,
    ids: Sequence[int] | None = None,
    due: bool = True,
) -> list[int]:
    """Lease up to ``limit`` due deployments above id ``after`` to ``owner``, lowest ids
    first, in one statement; their ids, sorted. ``ids`` narrows the claim to those; with
    ``due=False`` it takes them whatever they wait for (what a test's other replica does)."""
    rows = _CLAIMED
    wanted = select(rows.id).where(rows.id > after, claimable(owner, now, rows))
    if due:
        wanted = wanted.where(_due(now))
    if ids is not None:
        wanted = wanted.where(rows.id.in_(list(ids)))
    if project is not None:
        wanted = wanted.where(
            rows.project_id.in_(select(schema.Project.id).where(schema.Project.slug == project))
        )
    wanted = wanted.order_by(rows.id).limit(limit)
    if not sqlite:
        wanted = wanted.with_for_update(skip_locked=True)
    statement = (
        update(D)
        .where(D.id.in_(wanted.scalar_subquery()))
        .values(lease_owner=owner, lease_expires_at=now + LEASE)
        .returning(D.id)
        .execution_options(synchronize_session=False)
    )
    return sorted(session.scalars(statement))


def renew(session: Session, ids: Sequence[int], owner: str, now: datetime) -> None:
    """Extend ``owner``'s leases on ``ids`` (its batch is still running). One taken over
    meanwhile (ours had expired) stays the other replica's."""
    session.execute(
        update(D)
        .where(_among(session, D.id, ids), D.lease_owner == owner)
        .values(lease_expires_at=now + LEASE)
        .execution_options(synchronize_session=False)
    )


_ACTIVE = aliased(schema.Release)


def read(session: Session, ids: Iterable[int]) -> list[Claimed]:
    """The claimed deployments with their unit, environment, project and releases: one query."""
    query = (
        select(
            D.id,
            D.state,
            D.stage_marker,
            D.project_id,
            schema.Project.slug,
            schema.Project.clusters,
            D.environment_id,
            schema.Environment.name,
            D.unit_id,
            schema.Unit.name,
            D.release_id,
            schema.Release.number,
            schema.Release.image,
            schema.Release.config,
            schema.Unit.active_release_id,
            _ACTIVE.number,
            D.stage_started_at,
            D.created_at,
            D.waiting_on_id,
        )
        .join(schema.Environment, schema.Environment.id == D.environment_id)
        .join(schema.Project, schema.Project.id == D.project_id)
        .join(schema.Unit, schema.Unit.id == D.unit_id)
        .join(schema.Release, schema.Release.id == D.release_id)
        .outerjoin(_ACTIVE, _ACTIVE.id == schema.Unit.active_release_id)
        .where(_among(session, D.id, ids))
        .order_by(D.id)
    )
    return [
        Claimed(
            id=row[0],
            state=DeploymentState(row[1]),
            marker=StageMarker(row[2]) if row[2] else None,
            project_id=row[3],
            project=row[4],
            contexts=dict(row[5] or {}),
            environment_id=row[6],
            environment=row[7],
            unit_id=row[8],
            unit=row[9],
            release_id=row[10],
            number=row[11],
            image=row[12],
            config=row[13],
            active_id=row[14],
            active_number=row[15],
            stage_started=row[16] or row[17],
            waiting_on=row[18],
        )
        for row in session.execute(query)
    ]


@dataclass(frozen=True)
class Locked:
    """The rows a recording transaction holds: the batch's deployments by id, and what they
    refer to (kept here: the session's identity map only holds on to what is referenced)."""

    rows: dict[int, schema.Deployment]
    neighbours: tuple[object, ...]


def locked(session: Session, ids: Iterable[int], neighbours: Collection[int] = ()) -> Locked:
    """The batch's deployments, row-locked in id order and read afresh, waiting for each lock:
    our leases keep other replicas' steps away, so what can hold one is a request (cancel,
    supersede) that must be seen, not skipped. The units and releases (and the units'
    active releases) of those in ``neighbours`` come in two more queries, so recording them
    reads nothing row by row; the others' load if they are touched after all."""
    rows = session.scalars(
        select(D)
        .where(_among(session, D.id, ids))
        .order_by(D.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).all()
    wanted_ids = set(neighbours)
    rows_of = {d.id: d for d in rows}
    if not wanted_ids:
        return Locked(rows_of, ())
    rows = [d for d in rows if d.id in wanted_ids]
    units = _units(session, {d.unit_id for d in rows})
    wanted = {d.release_id for d in rows} | {d.previous_release_id for d in rows}
    wanted |= {u.active_release_id for u in units}
    return Locked(rows_of, (*units, *_releases(session, wanted)))


def open_in(session: Session, environments: Iterable[int], also: Iterable[int]) -> Locked:
    """The deployments in flight in ``environments`` (plus the ids in ``also``, the ones
    pending deployments were held behind), with their units and releases: three queries."""
    rows = session.scalars(
        select(D).where(
            _among(session, D.environment_id, environments),
            or_(D.finished_at.is_(None), _among(session, D.id, also)),
        )
    ).all()
    units = _units(session, {d.unit_id for d in rows})
    releases = _releases(session, {d.release_id for d in rows})
    return Locked({d.id: d for d in rows}, (*units, *releases))


def _units(session: Session, ids: set[int]) -> list[schema.Unit]:
    return list(session.scalars(select(schema.Unit).where(_among(session, schema.Unit.id, ids))))


def _releases(session: Session, ids: set[int | None]) -> list[schema.Release]:
    """Without their frozen configuration: recording a step does not read it."""
    return list(
        session.scalars(
            select(schema.Release)
            .where(_among(session, schema.Release.id, ids))
            .options(defer(schema.Release.config))
        )
    )
