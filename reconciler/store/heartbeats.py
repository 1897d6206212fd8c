"""The reconciler's heartbeat: each reconcile pass (the server's scheduler, or ``nebula
reconcile``) records when it ran and where, so that a person waiting on a deployment that does
not move is told when nothing is reconciling, instead of waiting in silence."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from reconciler.store import schema
from reconciler.store.sqlitereads import RECONCILER


def beat(session: Session, now: datetime, owner: str) -> None:
    row = session.get(schema.Heartbeat, RECONCILER)
    if row is None:
        session.add(schema.Heartbeat(name=RECONCILER, owner=owner, beat_at=now))
    else:
        row.owner, row.beat_at = owner, now


def last(session: Session) -> schema.Heartbeat | None:
    return session.get(schema.Heartbeat, RECONCILER)
