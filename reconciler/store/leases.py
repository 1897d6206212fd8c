"""Named leases in the store: which replica polls a project, runs a timer, or owns SQLite.

A lease is held until it expires; its holder renews it by claiming it again. A replica that
dies simply stops renewing, and another takes the lease over once it has expired. Nothing
relies on process memory: the database says who holds what.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.store import schema
from reconciler.store.database import Database

SQLITE_WRITER = "server:sqlite"


def claim(
    db: Database, clock: Clock, names: Iterable[str], owner: str, ttl: timedelta
) -> list[str]:
    """The leases of ``names`` that ``owner`` holds now: free, its own or expired ones are
    taken in one transaction (rows locked, so two replicas cannot both take one)."""
    wanted = list(names)
    now = clock.now()
    taken = []
    try:
        with db.transaction() as session:
            held = {
                lease.name: lease
                for lease in session.scalars(
                    select(schema.Lease).where(schema.Lease.name.in_(wanted)).with_for_update()
                )
            }
            for name in wanted:
                lease = held.get(name)
                if lease is None:
                    session.add(schema.Lease(name=name, owner=owner, expires_at=now + ttl))
                elif lease.owner == owner or lease.expires_at < now:
                    lease.owner, lease.expires_at = owner, now + ttl
                else:
                    continue  # another replica's, and alive
                taken.append(name)
    except IntegrityError:
        return []  # another replica inserted one first: the next round sorts it out
    return taken


def release(session: Session, names: Iterable[str], owner: str) -> None:
    session.execute(
        delete(schema.Lease).where(schema.Lease.name.in_(list(names)), schema.Lease.owner == owner)
    )


def holder(session: Session, clock: Clock, name: str) -> str | None:
    """Who holds ``name`` now (None when free or expired)."""
    row = session.scalars(select(schema.Lease).where(schema.Lease.name == name)).first()
    if row is None or row.expires_at < clock.now():
        return None
    return row.owner
