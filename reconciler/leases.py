"""Named leases in the store: which replica polls a project, runs a timer, or owns SQLite.

A lease is held until it expires; its holder renews it by acquiring it again. A replica that
dies simply stops renewing, and another takes the lease over once it has expired. Nothing
relies on process memory: the database says who holds what.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.store import schema


def acquire(session: Session, clock: Clock, name: str, owner: str, ttl: timedelta) -> bool:
    """Take or renew ``name`` for ``owner``; False if another live holder has it."""
    now = clock.now()
    result = session.execute(
        update(schema.Lease)
        .where(
            schema.Lease.name == name,
            or_(schema.Lease.owner == owner, schema.Lease.expires_at < now),
        )
        .values(owner=owner, expires_at=now + ttl)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount:  # type: ignore[attr-defined]
        return True
    try:
        with session.begin_nested():  # a savepoint: losing the race must not end the transaction
            session.add(schema.Lease(name=name, owner=owner, expires_at=now + ttl))
    except IntegrityError:
        return False
    return True


def release(session: Session, name: str, owner: str) -> None:
    session.execute(
        update(schema.Lease)
        .where(schema.Lease.name == name, schema.Lease.owner == owner)
        .values(expires_at=schema.Lease.expires_at - timedelta(days=3650))
        .execution_options(synchronize_session=False)
    )


def holder(session: Session, clock: Clock, name: str) -> str | None:
    """Who holds ``name`` now (None when free or expired)."""
    row = session.scalars(select(schema.Lease).where(schema.Lease.name == name)).first()
    if row is None or row.expires_at < clock.now():
        return None
    return row.owner
