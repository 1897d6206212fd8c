"""Named leases in the store: which replica polls a project, runs a timer, or owns SQLite.

A lease is held until it expires; its holder renews it by claiming it again. A replica that
dies simply stops renewing, and another takes the lease over once it has expired. Nothing
relies on process memory: the database says who holds what. A holder named ``host:pid`` (the
default replica id) that is provably gone (this host, and no such process) can be taken over
at once (``gone`` and ``take_over``): a server killed with SIGKILL restarts without waiting.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from reconciler import numbers
from reconciler.clock import Clock
from reconciler.errors import NebulaError
from reconciler.store import schema
from reconciler.store.database import Database

log = logging.getLogger("nebula.leases")
SQLITE_WRITER = "server:sqlite"


@contextmanager
def renewing(renew: Callable[[], object], every: timedelta, name: str) -> Iterator[None]:
    """``renew`` called every ``every`` from a thread of its own (``name``) until the block
    ends: the work the leases guard is still running, however long it takes. A renewal that
    fails is logged and tried again next round (the store may be back by then)."""
    done = threading.Event()

    def keep() -> None:
        while not done.wait(every.total_seconds()):
            try:
                renew()
            except Exception as exc:
                reason = exc.message if isinstance(exc, NebulaError) else type(exc).__name__
                log.warning("could not renew leases", extra={"reason": reason})

    keeper = threading.Thread(target=keep, name=name, daemon=True)
    keeper.start()
    try:
        yield
    finally:
        done.set()
        keeper.join()


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


def gone(owner: str) -> bool:
    """True when ``owner`` is ``host:pid`` of this host and no process has that pid: the
    holder died without releasing. Anything else (another host, a replica id set by hand, a
    pid that exists, perhaps reused) cannot be proved dead, and waits for the expiry."""
    host, sep, pid_text = owner.rpartition(":")
    pid = numbers.whole(pid_text)
    if not sep or pid is None or pid == 0 or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's process)
        return False
    return False


def take_over(
    db: Database, clock: Clock, name: str, owner: str, previous: str, ttl: timedelta
) -> bool:
    """``owner`` takes ``name`` from ``previous`` (known to be gone), only if ``previous``
    still holds it: of two servers starting at once, one takes it."""
    with db.transaction() as session:
        taken = session.execute(
            update(schema.Lease)
            .where(schema.Lease.name == name, schema.Lease.owner == previous)
            .values(owner=owner, expires_at=clock.now() + ttl)
        )
        return bool(getattr(taken, "rowcount", 0))
