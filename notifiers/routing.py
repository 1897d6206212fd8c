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

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from notifiers import keys, outbox, pagerduty
from notifiers.channels import ChannelKind, stored_events
from notifiers.keys import Kind
from reconciler.clock import Clock
from reconciler.store import schema

Row = schema.OutboxMessage
_CACHE = "nebula.notify_channels"


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
    return [
        c
        for c in _channels(session)
        if c.project_id in (None, project_id)
        and (environment is None or c.environment in (None, environment))
    ]


def wanted(session: Session, kind: Kind) -> bool:
    """Whether any channel could take a notice of ``kind``: when none can, the caller need
    not even read what the notice would say (a tick records a batch of healthy deployments
    in the same few statements whatever its size)."""
    event = keys.EVENT_OF[kind]
    return any(
        (event is not None and event in stored_events(c.events))
        or (c.kind == ChannelKind.PAGERDUTY and kind is Kind.DEPLOYMENT_HEALTHY)
        for c in _channels(session)
    )


def _channels(session: Session) -> list[schema.NotifyChannel]:
    """Every channel, read once per transaction (there are few; a tick notes many)."""
    found: list[schema.NotifyChannel] | None = session.info.get(_CACHE)
    if found is None:
        Channel = schema.NotifyChannel
        found = session.info[_CACHE] = list(session.scalars(select(Channel).order_by(Channel.id)))
    return found


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
