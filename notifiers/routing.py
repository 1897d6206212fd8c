"""Which channels a notice goes to: those whose scope holds it and whose events list it.

Called by ``notices`` in the transaction that records the cause, so each channel's row
exists if and only if the cause was committed. Each channel gets its own row (its own key,
``keys.for_channel``): one delivery per (channel, event), and one channel's retries never
wait on another's. A scope holds a notice of its organization, its project, or its
environment (a project's blocker concerns every environment of the project).

PagerDuty is told of the end of what it was told began: a failure's alert is resolved by
the service's next healthy deployment, whether or not the channel lists ``healthy``, and
only when an alert of that service is open there (its trigger sent, no resolve since).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from notifiers import keys, outbox, pagerduty
from notifiers.channels import ChannelKind, stored_events
from notifiers.keys import Kind
from reconciler.clock import Clock
from reconciler.store import schema

Row = schema.OutboxMessage


def fan_out(
    session: Session,
    clock: Clock,
    key: str,
    kind: Kind,
    payload: dict[str, Any],
    *,
    project_id: int,
    environment: str | None,
) -> int:
    """One row per channel that takes this notice; returns how many were recorded."""
    event = keys.EVENT_OF[kind]
    topic = _topic(kind, payload)
    recorded = 0
    for channel in candidates(session, project_id, environment):
        channel_kind = ChannelKind(channel.kind)
        listed = event is not None and event in stored_events(channel.events)
        if channel_kind is ChannelKind.PAGERDUTY and kind is Kind.DEPLOYMENT_HEALTHY:
            if topic is None or not _alert_open(session, channel.id, topic):
                continue
        elif not listed or (
            channel_kind is ChannelKind.WEBHOOK and keys.webhook_type(kind, payload) is None
        ):
            continue
        pd = channel_kind is ChannelKind.PAGERDUTY
        recorded += outbox.enqueue(
            session, clock, keys.for_channel(key, channel.id), kind, payload,
            channel_id=channel.id, topic=topic if pd else None,
        )  # fmt: skip
    return recorded


def candidates(
    session: Session, project_id: int, environment: str | None
) -> list[schema.NotifyChannel]:
    """The organization's channels, the project's, and the environment's (all of the
    project's environments' when the notice is about the project itself)."""
    Channel = schema.NotifyChannel
    query = select(Channel).where(
        or_(Channel.project_id.is_(None), Channel.project_id == project_id)
    )
    if environment is not None:
        query = query.where(or_(Channel.environment.is_(None), Channel.environment == environment))
    return list(session.scalars(query.order_by(Channel.id)))


def _topic(kind: Kind, payload: dict[str, Any]) -> str | None:
    if kind in (Kind.DEPLOYMENT_FAILED, Kind.DEPLOYMENT_HEALTHY):
        return pagerduty.alert_key(
            str(payload["project"]), str(payload["environment"]), str(payload["service"])
        )
    return None


def _alert_open(session: Session, channel_id: int, topic: str) -> bool:
    def last(kind: Kind) -> int:
        return int(
            session.scalar(
                select(func.max(Row.id)).where(
                    Row.channel_id == channel_id, Row.topic == topic, Row.kind == kind.value
                )
            )
            or 0
        )

    return last(Kind.DEPLOYMENT_FAILED) > last(Kind.DEPLOYMENT_HEALTHY)
