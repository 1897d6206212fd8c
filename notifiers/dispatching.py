"""From an outbox row to what its channel takes: a Slack post or edit (``delivering``), an HTTP
POST (a signed webhook, a PagerDuty event, a Teams card: ``posting``), or an e-mail (``smtp``).

``prepare`` reads the store and the channel's secrets (decrypted here, in the deliverer's
short transaction, and never kept) and builds the request; ``send`` makes it with no
transaction open; ``note`` keeps each channel's last delivery and last error for
``nebula notify list``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from notifiers import (
    cards,
    delivering,
    gathering,
    keys,
    mails,
    pagerduty,
    posting,
    smtp,
    summaries,
    webhooks,
)
from notifiers.channels import ChannelKind
from notifiers.facts import ApprovalRequest
from notifiers.keys import Kind
from notifiers.notifying import Notifier
from reconciler import logs
from reconciler.errors import PermanentError
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.store.crypto import Vault

Plan = delivering.Plan | posting.Request | smtp.Mail
Sendable = delivering.Post | delivering.Edit | posting.Request | smtp.Mail
NO_TOKEN = "Slack channels need NEBULA_SLACK_BOT_TOKEN on the server"
DECIDED_FIRST = (
    "the approval was decided before its request went out: its decision's notice says so"
)
# The default Slack channel's record, kept with the organization's settings.
DEFAULT_KEYS = ("notify.default.delivered", "notify.default.error", "notify.default.error_at")


def channel_of(session: Session, row: schema.OutboxMessage) -> schema.NotifyChannel | None:
    return session.get(schema.NotifyChannel, row.channel_id) if row.channel_id else None


def kind_of(channel: schema.NotifyChannel | None) -> str:
    return channel.kind if channel is not None else ChannelKind.SLACK.value


def prepare(
    session: Session,
    settings: Settings,
    vault: Vault,
    row: schema.OutboxMessage,
    channel: schema.NotifyChannel | None,
) -> Plan:
    if channel is None:
        if row.channel_id is not None:
            return delivering.Skip(f"channel {row.channel_id} was removed")
        return delivering.prepare(session, settings, row)
    kind = ChannelKind(channel.kind)
    if kind is ChannelKind.SLACK:
        if not settings.slack_bot_token:
            return delivering.Fail(NO_TOKEN)
        return delivering.prepare(session, settings, row, to=channel.address)
    facts = gathering.of_row(session, settings, Kind(row.kind), row.payload or {})
    if isinstance(facts, str):
        return delivering.Skip(facts)
    decided = isinstance(facts, ApprovalRequest) and facts.decision is not None
    if decided and Kind(row.kind) is Kind.APPROVAL_REQUEST and kind is not ChannelKind.WEBHOOK:
        # People and pagers are told of the decision by its own notice; a webhook gets every
        # event, in order, for the record.
        return delivering.Skip(DECIDED_FIRST)
    secrets: dict[str, str] = json.loads(vault.decrypt(channel.secrets)) if channel.secrets else {}
    logs.SCRUBBER.add(secrets.values())  # no log line may carry them, whoever writes it
    if kind is ChannelKind.WEBHOOK:
        sort = keys.webhook_type(Kind(row.kind), row.payload or {})
        if sort is None:
            return delivering.Skip("webhooks are not sent this kind of notice")
        return posting.Request(
            what="the webhook",
            url=secrets["url"],
            body=webhooks.body(sort, row.created_at, facts),
            signing_secret=secrets["signing_secret"],
            message_id=webhooks.message_id(row.key),
        )
    if kind is ChannelKind.PAGERDUTY:
        event = pagerduty.event(facts, secrets["routing_key"], row.created_at, settings.public_url)
        return posting.Request(
            what="PagerDuty",
            url=settings.pagerduty_url.rstrip("/") + pagerduty.PATH,
            body=json.dumps(event).encode("utf-8"),
        )
    summary = summaries.of(facts)
    if kind is ChannelKind.TEAMS:
        body = json.dumps(cards.message(summary), ensure_ascii=False).encode("utf-8")
        return posting.Request(what="the Teams workflow", url=secrets["url"], body=body)
    recipients = tuple((channel.address or "").split(","))
    sort = keys.webhook_type(Kind(row.kind), row.payload or {})
    sender = settings.email_from or f"nebula@{urlsplit(settings.public_url).hostname}"
    return smtp.Mail(
        smtp.server(settings.smtp_url),
        sender,
        recipients,
        mails.message(
            summary,
            sender=sender,
            recipients=recipients,
            key=row.key,
            event=sort.value if sort is not None else Kind(row.kind).value,
            public_url=settings.public_url,
            at=row.created_at,
        ),
    )


def send(
    notifier: Notifier | None,
    plan: Sendable,
    key: str,
    created_at: datetime,
    now: datetime,
    *,
    look_first: bool,
) -> dict[str, Any]:
    if isinstance(plan, posting.Request):
        return posting.post(plan, now)
    if isinstance(plan, smtp.Mail):
        return smtp.send(plan)
    if notifier is None:
        raise PermanentError(NO_TOKEN)
    return delivering.send(notifier, plan, key, created_at, look_first=look_first)


def note(session: Session, channel_id: int | None, at: datetime, error: str | None) -> None:
    """The channel's last delivery (``error`` None) or its last error, with when."""
    if channel_id is None:
        delivered, failed, failed_at = DEFAULT_KEYS
        if error is None:
            _put(session, delivered, at.isoformat())
        else:
            _put(session, failed, error[:1000])
            _put(session, failed_at, at.isoformat())
        return
    channel = session.get(schema.NotifyChannel, channel_id)
    if channel is None:
        return
    if error is None:
        channel.last_delivered_at = at
    else:
        channel.last_error, channel.last_error_at = error[:1000], at


def default_record(session: Session) -> tuple[str | None, str | None, str | None]:
    """The default Slack channel's (last delivery, last error, its time), as stored."""
    query = select(schema.Setting.key, schema.Setting.value).where(
        schema.Setting.key.in_(DEFAULT_KEYS)
    )
    found = {str(r[0]): str(r[1]) for r in session.execute(query)}
    delivered, failed, failed_at = (found.get(k) for k in DEFAULT_KEYS)
    return delivered, failed, failed_at


def _put(session: Session, key: str, value: str) -> None:
    """An upsert: two replicas noting at once must not fail the delivery's transaction."""
    module = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = module.insert(schema.Setting).values(key=key, value=value)
    session.execute(statement.on_conflict_do_update(index_elements=["key"], set_={"value": value}))
