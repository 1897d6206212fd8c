"""The durable outbox: notices written with the change that caused them, delivered later.

One outbox carries every channel: a notice for the default Slack channel of the settings
(``channel_id`` null, as before channels existed) and one row per channel it fans out to
(``routing``), each with its own key, so each (channel, event) is delivered at most once.

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
- failures back off exponentially; a 429 holds every due row of that channel until its
  ``Retry-After``, and a channel that is down waits out its backoff with all its rows;
- an approval's update waits for its request to be posted, since it edits that message.

Delivery never runs inside a deployment's transaction and holds no lock while a channel is
called, so an outage delays notices, never a deployment, and never another channel's.
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

from notifiers import delivering, dispatching
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
from reconciler.store.crypto import Vault
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
Observe = Callable[[str, str], None]  # (channel kind, outcome)


class Wiring(Protocol):
    """What delivery needs of the process's context (``reconciler.context.Context`` has it):
    named here so the notifiers stay an edge that knows nothing above the store."""

    @property
    def db(self) -> Database: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def vault(self) -> Vault: ...


def enqueue(
    session: Session,
    clock: Clock,
    key: str,
    kind: str,
    payload: dict[str, Any],
    *,
    channel_id: int | None = None,
    topic: str | None = None,
) -> bool:
    """Record a notice; False when one with this key exists already (nothing is changed).
    ``channel_id`` None: for the default Slack channel of the settings."""
    now = clock.now()
    values = {
        "key": key,
        "kind": str(kind),
        "payload": payload,
        "created_at": now,
        "attempts": 0,
        "next_attempt_at": now,
        "channel_id": channel_id,
        "topic": topic,
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
    STOP = "stop"  # the channel is down or rate-limiting: its next row would not fare better


def backoff(attempts: int) -> float:
    return float(min(FIRST_RETRY * 2 ** max(attempts - 1, 0), MAX_RETRY))


def deliver_due(
    ctx: Wiring,
    notifier: Notifier | None = None,
    *,
    keys: list[str] | None = None,
    observe: Observe | None = None,
) -> int:
    """Send every due notice (or only ``keys``); returns how many were delivered.

    Without a Slack notifier (no ``NEBULA_SLACK_BOT_TOKEN``) the default Slack channel's
    notices stay recorded and undelivered, and go out once a token is configured; every
    other channel's go out all the same. A channel that is down or rate-limiting is passed
    over for the rest of the round (its due rows wait with it): it never holds another.
    ``observe(channel_kind, outcome)`` is told of each attempt (the server's metrics).
    """
    if notifier is None:
        made: Callable[[Settings], Notifier | None] = SLACK.get()
        notifier = made(ctx.settings)
    query = select(Row.id, Row.channel_id).where(
        Row.delivered_at.is_(None), Row.next_attempt_at <= ctx.clock.now()
    )
    if notifier is None:
        query = query.where(Row.channel_id.is_not(None))
    if keys is not None:
        query = query.where(Row.key.in_(keys))
    with ctx.db.transaction() as session:
        due = [(r[0], r[1]) for r in session.execute(query.order_by(Row.id).limit(BATCH))]
    delivered = 0
    stopped: set[int | None] = set()
    for row_id, channel_id in due:
        if channel_id in stopped:
            continue
        outcome, kind = _deliver_one(ctx, notifier, row_id, asked=keys is not None)
        if observe is not None and kind is not None and outcome is not _Outcome.SKIPPED:
            observe(kind, _Outcome.FAILED if outcome is _Outcome.STOP else outcome)
        if outcome is _Outcome.STOP:
            stopped.add(channel_id)
        delivered += outcome is _Outcome.DELIVERED
    return delivered


def _deliver_one(
    ctx: Wiring, notifier: Notifier | None, row_id: int, *, asked: bool = False
) -> tuple[_Outcome, str | None]:
    """``asked``: someone waits for this very notice (a test, a click) and is told of a
    failure; it is logged at info, not as a warning."""
    now = ctx.clock.now()
    with ctx.db.transaction() as session:
        row = session.get(Row, row_id)
        if row is None or row.delivered_at is not None or row.next_attempt_at > now:
            return _Outcome.SKIPPED, None
        channel = dispatching.channel_of(session, row)
        kind = dispatching.kind_of(channel)
        try:
            plan = dispatching.prepare(session, ctx.settings, ctx.vault, row, channel)
        except NebulaError as exc:
            plan = delivering.Fail(exc.message)
        except Exception as exc:  # one malformed row must not hold back every row after it
            log.exception("cannot build notice %s", row.key)
            plan = delivering.Fail(f"cannot build the message: {type(exc).__name__}: {exc}")
        if isinstance(plan, delivering.Wait):
            row.next_attempt_at = max(plan.until, now + timedelta(seconds=1))
            return _Outcome.SKIPPED, kind
        if isinstance(plan, delivering.Skip):
            row.delivered_at = now
            row.result = {"skipped": plan.reason}
            row.last_error = None
            return _Outcome.SKIPPED, kind
        uncertain = row.last_error == IN_FLIGHT or bool((row.result or {}).get("uncertain"))
        attempts, key, created_at = row.attempts, row.key, row.created_at
        if isinstance(plan, delivering.Fail):
            row.attempts = attempts + 1
            _failed(row, now, plan.reason, backoff(attempts + 1), uncertain=uncertain)
            dispatching.note(session, row.channel_id, now, plan.reason)
            return _Outcome.FAILED, kind
        claimed = session.execute(
            update(Row)
            .where(Row.id == row_id, Row.attempts == attempts, Row.delivered_at.is_(None))
            .values(attempts=attempts + 1, next_attempt_at=now + CLAIM, last_error=IN_FLIGHT)
        ).rowcount  # type: ignore[attr-defined]
        if not claimed:
            return _Outcome.SKIPPED, None  # another deliverer has it
        channel_id = row.channel_id
    try:
        result = dispatching.send(
            notifier, plan, key, created_at, ctx.clock.now(), look_first=uncertain
        )
    except RateLimitedError as exc:
        _record_failure(ctx, row_id, exc, exc.retry_after, uncertain=uncertain, asked=asked)
        _hold(ctx, channel_id, ctx.clock.now() + timedelta(seconds=exc.retry_after))
        return _Outcome.STOP, kind
    except (UnansweredError, TransientError) as exc:
        unanswered = isinstance(exc, UnansweredError)
        delay = backoff(attempts + 1)
        _record_failure(ctx, row_id, exc, delay, uncertain=uncertain or unanswered, asked=asked)
        _hold(ctx, channel_id, ctx.clock.now() + timedelta(seconds=delay))
        return _Outcome.STOP, kind
    except PermanentError as exc:
        _record_failure(ctx, row_id, exc, backoff(attempts + 1), uncertain=uncertain, asked=asked)
        return _Outcome.FAILED, kind
    with ctx.db.transaction() as session:
        row = session.get(Row, row_id)
        if row is None or row.delivered_at is not None:
            return _Outcome.SKIPPED, None
        row.delivered_at = ctx.clock.now()
        row.result = result
        row.last_error = None
        delivering.delivered(session, row, result)
        dispatching.note(session, row.channel_id, row.delivered_at, None)
    return _Outcome.DELIVERED, kind


def _failed(row: Row, now: datetime, reason: str, delay: float, *, uncertain: bool) -> None:
    row.next_attempt_at = now + timedelta(seconds=delay)
    row.last_error = reason[:1000]
    row.result = {"uncertain": True} if uncertain else None


def _record_failure(
    ctx: Wiring,
    row_id: int,
    exc: NebulaError,
    delay: float,
    *,
    uncertain: bool,
    asked: bool = False,
) -> None:
    level = logging.INFO if asked else logging.WARNING
    log.log(level, "notice %s not delivered: %s", row_id, exc.message)
    with ctx.db.transaction() as session:
        row = session.get(Row, row_id)
        if row is None or row.delivered_at is not None:
            return
        now = ctx.clock.now()
        _failed(row, now, exc.message, delay, uncertain=uncertain)
        dispatching.note(session, row.channel_id, now, exc.message)


def _hold(ctx: Wiring, channel_id: int | None, until: datetime) -> None:
    """The channel said to wait, or is down: none of its due notices goes out before
    ``until``, whichever row asks; other channels' notices are not held."""
    same = Row.channel_id.is_(None) if channel_id is None else Row.channel_id == channel_id
    with ctx.db.transaction() as session:
        session.execute(
            update(Row)
            .where(Row.delivered_at.is_(None), Row.next_attempt_at < until, same)
            .values(next_attempt_at=until)
        )


def pending(session: Session) -> int:
    """The backlog: notices recorded and not delivered yet (for metrics)."""
    return int(session.scalar(select(func.count(Row.id)).where(Row.delivered_at.is_(None))) or 0)
