"""Releases: numbered per service per environment, immutable once created.

A release freezes the unit's effective configuration with its references resolved (secrets
by reference only) and the dependencies it waits for, so a later edit of the project does not
change a deployment in flight. When one goes active, the previous active release retires; the
3 most recent retired releases stay available for rollback, older ones become unavailable
(rows and events are kept).
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from reconciler import numbers
from reconciler.clock import Clock
from reconciler.core.planning import Value, flatten
from reconciler.core.states import ReleaseStatus, ServiceKind
from reconciler.model import resolved
from reconciler.model.frozen import FrozenRelease
from reconciler.store import schema

ROLLBACK_DEPTH = 3


def frozen(release: schema.Release) -> FrozenRelease:
    """The release's frozen configuration, as a value (never its stored document's keys)."""
    return FrozenRelease.from_storage(release.config)


def live_values(unit: schema.Unit) -> dict[str, Value]:
    """What is live now: the active release's configuration, plus unit-level settings."""
    values: dict[str, Value] = {}
    if unit.active_release is not None:
        values = flatten(frozen(unit.active_release).unit)
    if unit.kind == ServiceKind.SERVICE:
        values["auto_deploy"] = unit.auto_deploy
    return values


def live_resolved(unit: schema.Unit, namespace: str) -> dict[str, str]:
    """Each variable of the active release as its container reads it (``variables.X`` ->
    the value shown; secrets and credentials stay references): what a line that changed
    through a reference compares with."""
    if unit.active_release is None or unit.kind != ServiceKind.SERVICE:
        return {}
    values = resolved.of_release(frozen(unit.active_release))
    return {f"variables.{key}": value.shown(namespace) for key, value in values.items()}


def headline(release: schema.Release | None) -> str | None:
    return frozen(release).headline if release is not None else None


def create(
    session: Session, clock: Clock, unit: schema.Unit, config: FrozenRelease, source: str
) -> schema.Release:
    """A new release with the next number of this unit (numbers are never reused or skipped)."""
    # Lock the unit's row (PostgreSQL; SQLite has one writer anyway) so two replicas or a CLI
    # beside a server never take the same number.
    session.refresh(unit, attribute_names=["next_release_number"], with_for_update=True)
    number = unit.next_release_number
    unit.next_release_number = number + 1
    release = schema.Release(
        unit_id=unit.id,
        number=number,
        image=config.image,
        config=config.for_storage(),
        status=ReleaseStatus.CREATED.value,
        source=source,
        created_at=clock.now(),
    )
    session.add(release)
    session.flush()
    return release


def activate(session: Session, clock: Clock, unit: schema.Unit, release: schema.Release) -> None:
    """``release`` serves now; the previous one retires; only the newest retired stay available.

    One statement besides the rows already loaded (none for a unit with too few releases):
    the retired releases past the newest ``ROLLBACK_DEPTH`` are marked unavailable where they
    are, not loaded (nor is anything flushed first: the one retired just now is the newest,
    and is left out of the statement)."""
    previous = unit.active_release
    keep = ROLLBACK_DEPTH
    retiring = previous is not None and previous.id != release.id
    if previous is not None and retiring:
        previous.status = ReleaseStatus.RETIRED.value
        previous.retired_at = clock.now()
        keep -= 1
    release.status = ReleaseStatus.ACTIVE.value
    release.retired_at = None
    unit.active_release_id = release.id
    unit.active_release = release
    unit.drift_checked_at = None  # the new release's objects are checked next (drifting)
    if unit.next_release_number <= ROLLBACK_DEPTH + 2:
        return  # too few releases ever for one to be retired past the newest ROLLBACK_DEPTH
    others = [
        schema.Release.unit_id == unit.id,
        schema.Release.status == ReleaseStatus.RETIRED.value,
        schema.Release.id.not_in([r.id for r in (previous, release) if r is not None]),
    ]
    newest = (
        select(schema.Release.id)
        .where(*others)
        .order_by(schema.Release.retired_at.desc(), schema.Release.number.desc())
        .limit(keep)
    )
    # On the session's connection: the statement needs nothing flushed, so nothing is.
    session.connection().execute(
        update(schema.Release)
        .where(*others, schema.Release.id.not_in(newest.scalar_subquery()))
        .values(status=ReleaseStatus.UNAVAILABLE.value)
    )


def abandon(release: schema.Release) -> None:
    """A release whose deployment ended without going healthy is never served."""
    if release.status == ReleaseStatus.CREATED.value:
        release.status = ReleaseStatus.ABANDONED.value


def available_for_rollback(session: Session, unit: schema.Unit) -> list[schema.Release]:
    return list(
        session.scalars(
            select(schema.Release)
            .where(
                schema.Release.unit_id == unit.id,
                schema.Release.status == ReleaseStatus.RETIRED.value,
            )
            .order_by(schema.Release.retired_at.desc(), schema.Release.number.desc())
        )
    )


def ever_served(session: Session, unit: schema.Unit) -> bool:
    """Whether any release of ``unit`` ever went live (active now, retired or unavailable)."""
    served = (ReleaseStatus.ACTIVE, ReleaseStatus.RETIRED, ReleaseStatus.UNAVAILABLE)
    found = select(schema.Release.id).where(
        schema.Release.unit_id == unit.id, schema.Release.status.in_([s.value for s in served])
    )
    return session.scalars(found.limit(1)).first() is not None


def by_name(session: Session, unit: schema.Unit, name: str) -> schema.Release | None:
    number = numbers.whole(name.strip().lower().removeprefix("r-").removeprefix("r"))
    if number is None:
        return None
    return session.scalars(
        select(schema.Release).where(
            schema.Release.unit_id == unit.id, schema.Release.number == number
        )
    ).first()
