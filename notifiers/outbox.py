"""The durable outbox: notices written with the change that caused them, delivered later.

``enqueue`` runs inside the caller's transaction, so a notice exists if and only if its
cause was committed; its key makes it idempotent (a second enqueue of the same key does
nothing, even from a concurrent transaction). ``deliver_due`` sends what is due, from any
number of processes:

- a row is claimed before anything is sent (a conditional update on its attempt count), so
  two deliverers never send the same row at the same time; a claim lasts ``CLAIM`` and a
  deliverer that died holding one simply lets it lapse;
- a post's channel and ts are recorded the moment Slack answers; a row whose previous
  attempt never reported (its deliverer died) or got no answer first looks for the message
  it may have posted (by its key, in the message metadata) before posting again;
- failures back off exponentially; a 429 holds every due row until its ``Retry-After``;
- an approval's update waits for its request to be posted, since it edits that message.

Delivery never runs inside a deployment's transaction and holds no lock while Slack is
called, so a Slack outage delays notices, never a deployment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from notifiers import delivering
from notifiers.notifying import Notifier
from reconciler.clock import Clock
from reconciler.errors import (
    NebulaError,
    PermanentError,
    RateLimitedError,
    TransientError,
    UnansweredError,
)
from reconciler.lazy import Part
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.store.database import Database

# The Slack client (slack_sdk) is loaded when something is delivered, not with the outbox.
SLACK = Part("notifiers.slack", "from_settings")
log = logging.getLogger("nebula.outbox")
CLAIM = timedelta(seconds=60)
FIRST_RETRY = 5.0  # seconds; doubles per attempt
MAX_RETRY = 1800.0
BATCH = 100
IN_FLIGHT = "in flight: no outcome reported yet"
Row = schema.OutboxMessage


class Wiring(Protocol):
    """What delivery needs of the process's context (``reconciler.context.Context`` has it):
    named here so the notifiers stay an edge that knows nothing above the store."""

    @property
    def db(self) -> Database: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def settings(self) -> Settings: ...


def enqueue(session: Session, clock: Clock, key: str, kind: str, payload: dict[str, Any]) -> bool:
    """Record a notice; False when one with this key exists already (nothing is changed)."""
    now = clock.now()
    values = {
        "key": key,
        "kind": str(kind),
        "payload": payload,
        "created_at": now,
        "attempts": 0,
        "next_attempt_at": now,
    }
    dialect = session.get_bind().dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    statement = module.insert(Row).values(**values).on_conflict_do_nothing(index_elements=["key"])
    # RETURNING, not rowcount: psycopg counts a skipped conflicting row as one.
    return session.execute(statement.returning(Row.id)).first() is not None


class _Outcome(StrEnum):
    DELIVERED = "delivered"
    SKIPPED = "skipped"
    FAILED = "failed"
    STOP = "stop"  # Slack is down or rate-limiting: trying the next row now would not help


def backoff(attempts: int) -> float:
    return float(min(FIRST_RETRY * 2 ** max(attempts - 1, 0), MAX_RETRY))


def deliver_due(
    ctx: Wiring, notifier: Notifier | None = None, *, keys: list[str] | None = None
) -> int:
    """Send every due notice (or only ``keys``); returns how many were delivered.

    Without a notifier and without ``NEBULA_SLACK_BOT_TOKEN`` this does nothing: the notices
    stay recorded and undelivered, and go out once a token is configured.
    """
    if notifier is None:
        made: Callable[[Settings], Notifier | None] = SLACK.get()
        notifier = made(ctx.settings)
        if notifier is None:
            return 0
    query = select(Row.id).where(Row.delivered_at.is_(None), Row.next_attempt_at <= ctx.clock.now())
    if keys is not None:
        query = query.where(Row.key.in_(keys))
    with ctx.db.transaction() as session:
        due = list(session.scalars(query.order_by(Row.id).limit(BATCH)))
    delivered = 0
    for row_id in due:
        outcome = _deliver_one(ctx, notifier, row_id)
        if outcome is _Outcome.STOP:
            break
        delivered += outcome is _Outcome.DELIVERED
    return delivered


def _deliver_one(ctx: Wiring, notifier: Notifier, row_id: int) -> _Outcome:
    now = ctx.clock.now()
    with ctx.db.transaction() as session:
        row = session.get(Row, row_id)
        if row is None or row.delivered_at is not None or row.next_attempt_at > now:
            return _Outcome.SKIPPED
        try:
            plan = delivering.prepare(session, ctx.settings, row)
        except NebulaError as exc:
            plan = delivering.Fail(exc.message)
        except Exception as exc:  # one malformed row must not hold back every row after it
            log.exception("cannot build notice %s", row.key)
            plan = delivering.Fail(f"cannot build the message: {type(exc).__name__}: {exc}")
        if isinstance(plan, delivering.Wait):
            row.next_attempt_at = max(plan.until, now + timedelta(seconds=1))
            return _Outcome.SKIPPED
        if isinstance(plan, delivering.Skip):
            row.delivered_at = now
            row.result = {"skipped": plan.reason}
            row.last_error = None
            return _Outcome.SKIPPED
        uncertain = row.last_error == IN_FLIGHT or bool((row.result or {}).get("uncertain"))
        attempts, key, created_at = row.attempts, row.key, row.created_at
        if isinstance(plan, delivering.Fail):
            row.attempts = attempts + 1
            _failed(row, now, plan.reason, backoff(attempts + 1), uncertain=uncertain)
            return _Outcome.FAILED
        claimed = session.execute(
            update(Row)
            .where(Row.id == row_id, Row.attempts == attempts, Row.delivered_at.is_(None))
            .values(attempts=attempts + 1, next_attempt_at=now + CLAIM, last_error=IN_FLIGHT)
        ).rowcount  # type: ignore[attr-defined]
        if not claimed:
            return _Outcome.SKIPPED  # another deliverer has it
    try:
        result = delivering.send(notifier, plan, key, created_at, look_first=uncertain)
    except RateLimitedError as exc:
        _record_failure(ctx, row_id, exc, exc.retry_after, uncertain=uncertain)
        _hold_all(ctx, ctx.clock.now() + timedelta(seconds=exc.retry_after))
        return _Outcome.STOP
    except UnansweredError as exc:
        _record_failure(ctx, row_id, exc, backoff(attempts + 1), uncertain=True)
        return _Outcome.STOP
    except TransientError as exc:
        _record_failure(ctx, row_id, exc, backoff(attempts + 1), uncertain=uncertain)
        return _Outcome.STOP
    except PermanentError as exc:
        _record_failure(ctx, row_id, exc, backoff(attempts + 1), uncertain=uncertain)
        return _Outcome.FAILED
    with ctx.db.transaction() as session:
        row = session.get(Row, row_id)
        if row is None or row.delivered_at is not None:
            return _Outcome.SKIPPED
        row.delivered_at = ctx.clock.now()
        row.result = result
        row.last_error = None
        delivering.delivered(session, row, result)
    return _Outcome.DELIVERED


def _failed(row: Row, now: datetime, reason: str, delay: float, *, uncertain: bool) -> None:
    row.next_attempt_at = now + timedelta(seconds=delay)
    row.last_error = reason[:1000]
    row.result = {"uncertain": True} if uncertain else None


def _record_failure(
    ctx: Wiring, row_id: int, exc: NebulaError, delay: float, *, uncertain: bool
) -> None:
    log.warning("notice %s not delivered: %s", row_id, exc.message)
    with ctx.db.transaction() as session:
        row = session.get(Row, row_id)
        if row is None or row.delivered_at is not None:
            return
        _failed(row, ctx.clock.now(), exc.message, delay, uncertain=uncertain)


def _hold_all(ctx: Wiring, until: datetime) -> None:
    """Slack said to wait: nothing due goes out before ``until``, whichever row asks."""
    with ctx.db.transaction() as session:
        session.execute(
            update(Row)
            .where(Row.delivered_at.is_(None), Row.next_attempt_at < until)
            .values(next_attempt_at=until)
        )


def pending(session: Session) -> int:
    """The backlog: notices recorded and not delivered yet (for metrics)."""
    return int(session.scalar(select(func.count(Row.id)).where(Row.delivered_at.is_(None))) or 0)
