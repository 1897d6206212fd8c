"""From an outbox row to a Slack call: what to send, where, and what to remember afterwards.

``prepare`` reads the store (inside the deliverer's short transaction) and decides: post a
new message, edit one, wait for another row first, skip, or fail without calling Slack.
``send`` makes the call with no transaction open. ``delivered`` records what Slack answered
(an approval request's channel and ts, which its later update edits).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from notifiers import gathering, keys, messages
from notifiers.facts import ApprovalRequest
from notifiers.keys import Kind
from notifiers.notifying import Message, Notifier, Posted
from reconciler.errors import PermanentError
from reconciler.settings import Settings
from reconciler.store import schema

log = logging.getLogger("nebula.outbox")
# Slack's clock and ours may differ a little: look back this much further for a lost post.
CLOCK_SKEW = timedelta(minutes=5)
NEVER_POSTED = "the approval request was never posted, so there is no message to update"
NO_CHANNEL = (
    "no Slack channel to post to: set NEBULA_SLACK_CHANNEL, or the project's channel with "
    "nebula project set SLUG slack_channel C0123456"
)


@dataclass(frozen=True)
class Post:
    channel: str
    message: Message


@dataclass(frozen=True)
class Edit:
    posted: Posted
    message: Message


@dataclass(frozen=True)
class Wait:
    until: datetime


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class Fail:
    reason: str


Plan = Post | Edit | Wait | Skip | Fail


def prepare(
    session: Session, settings: Settings, row: schema.OutboxMessage, to: str | None = None
) -> Plan:
    """``to``: a Slack channel's id (a channel of ``nebula notify add slack``); None: the
    default channel (the project's ``slack_channel``, else ``NEBULA_SLACK_CHANNEL``)."""
    kind = Kind(row.kind)
    facts = gathering.of_row(session, settings, kind, row.payload or {})
    if isinstance(facts, str):
        return Skip(facts)
    message = messages.of(facts)
    if not isinstance(facts, ApprovalRequest) or kind is Kind.APPROVAL_REQUEST:
        if to is not None:
            return Post(to, message)
        return _post(session, settings, getattr(facts, "project", None), message)
    if row.channel_id is not None:
        return _edit_channel(session, row.channel_id, facts.approval_id, message)
    approval = session.get(schema.Approval, facts.approval_id)
    assert approval is not None  # of_row read it just now
    if approval.slack_channel and approval.slack_ts:
        return Edit(Posted(approval.slack_channel, approval.slack_ts), message)
    request = _row(session, keys.approval_request(approval.id))
    if request is not None and request.delivered_at is None:
        return Wait(request.next_attempt_at)  # it edits that message: the request goes first
    if request is not None:
        # Delivered, perhaps by another replica after the approval was read above (each
        # statement reads what is committed when it starts): read where it went again.
        session.refresh(approval, attribute_names=["slack_channel", "slack_ts"])
        if approval.slack_channel and approval.slack_ts:
            return Edit(Posted(approval.slack_channel, approval.slack_ts), message)
    return Skip(NEVER_POSTED)


def _edit_channel(session: Session, channel_id: int, approval_id: int, message: Message) -> Plan:
    """A channel's request message is where its own request row says it went."""
    request = _row(session, keys.for_channel(keys.approval_request(approval_id), channel_id))
    if request is not None and request.delivered_at is None:
        return Wait(request.next_attempt_at)
    result = (request.result or {}) if request is not None else {}
    if result.get("channel") and result.get("ts"):
        return Edit(Posted(str(result["channel"]), str(result["ts"])), message)
    return Skip(NEVER_POSTED)


def _row(session: Session, key: str) -> schema.OutboxMessage | None:
    return session.scalars(
        select(schema.OutboxMessage).where(schema.OutboxMessage.key == key)
    ).first()


def _post(session: Session, settings: Settings, slug: str | None, message: Message) -> Plan:
    project = (
        session.scalars(select(schema.Project).where(schema.Project.slug == slug)).first()
        if slug
        else None
    )
    channel = (project.slack_channel if project is not None else None) or settings.slack_channel
    return Post(channel, message) if channel else Fail(NO_CHANNEL)


def send(
    notifier: Notifier, plan: Post | Edit, key: str, created_at: datetime, *, look_first: bool
) -> dict[str, Any]:
    """Make the call; ``look_first`` when an earlier attempt may have posted already."""
    if isinstance(plan, Edit):
        posted = notifier.update(plan.posted, plan.message)
        return {"channel": posted.channel, "ts": posted.ts, "updated": True}
    if look_first:
        try:
            found = notifier.find(plan.channel, key, created_at - CLOCK_SKEW)
        except PermanentError as exc:
            # No history scope, or a channel name instead of an id: post (at least once).
            log.warning("cannot look for an earlier post of %s: %s", key, exc.message)
            found = None
        if found is not None:
            return {"channel": found.channel, "ts": found.ts, "found": True}
    posted = notifier.post(plan.channel, plan.message, key)
    return {"channel": posted.channel, "ts": posted.ts}


def delivered(session: Session, row: schema.OutboxMessage, result: dict[str, Any]) -> None:
    """The default channel's request message is recorded on the approval (a Slack click
    names it); a channel's stays in its own row's result."""
    if row.kind != Kind.APPROVAL_REQUEST.value or row.channel_id is not None:
        return
    approval = session.get(schema.Approval, int((row.payload or {})["approval_id"]))
    if approval is not None:
        approval.slack_channel = str(result["channel"])
        approval.slack_ts = str(result["ts"])
