"""Notification channels (``nebula notify add|list|remove|test``): listed for any member (a
token always: a channel's target says where an organization's alerts go), changed and tested
by an admin or an owner, every change audited. Nothing here answers a secret back but a
webhook's signing secret, once, when it is made.

The default Slack channel (``NEBULA_SLACK_BOT_TOKEN`` with ``NEBULA_SLACK_CHANNEL`` or each
project's ``slack_channel``) is listed as channel ``default``: it comes from the settings,
so it is tested here and changed there.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from notifiers import channels as kinds
from notifiers import dispatching, keys, outbox
from notifiers.keys import Kind
from reconciler.acts.calls import Call, Document
from reconciler.admin import channels, projects
from reconciler.core import rights
from reconciler.core.states import AdminAction
from reconciler.errors import ConfigurationError, ConflictError
from reconciler.numbers import parse_id
from reconciler.store import schema
from reconciler.views import iso

DEFAULT = kinds.DEFAULT_ID


def _channel(row: schema.NotifyChannel, slug: str | None) -> Document:
    return {
        "id": str(row.id),
        "kind": row.kind,
        "scope": kinds.scope_text(slug, row.environment),
        "project": slug,
        "environment": row.environment,
        "events": row.events.split(","),
        "target": row.target,
        "last_delivery": iso(row.last_delivered_at),
        "last_error": row.last_error,
        "last_error_at": iso(row.last_error_at),
        "created_at": iso(row.created_at),
        "created_by": row.created_by,
    }


def _default(call: Call, session: Session) -> Document | None:
    settings = call.ctx.settings
    if not settings.slack_bot_token:
        return None
    delivered, failed, failed_at = dispatching.default_record(session)
    return {
        "id": DEFAULT,
        "kind": kinds.ChannelKind.SLACK.value,
        "scope": kinds.ORGANIZATION,
        "project": None,
        "environment": None,
        "events": [e.value for e in kinds.SLACK_DEFAULT_EVENTS],
        "target": settings.slack_channel or "each project's slack_channel",
        "last_delivery": _stamp(delivered),
        "last_error": failed,
        "last_error_at": _stamp(failed_at),
        "created_at": None,
        "created_by": "settings",
    }


def _stamp(text: str | None) -> str | None:
    return iso(datetime.fromisoformat(text)) if text else None


def list_channels(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        found = [_channel(row, slug) for row, slug in channels.listing(session)]
        default = _default(call, session)
    return {"channels": ([default] if default is not None else []) + found}


def add_channel(call: Call) -> Document:
    rights.require_admin(call.who, "add notification channels")
    kind = kinds.parse_kind(call.text("kind"))
    target = kinds.parse_target(kind, call.text("target"))
    events = kinds.parse_events(call.maybe("on"))
    slug, environment = call.maybe("project"), call.maybe("environment")
    if environment is not None and slug is None:
        raise ConfigurationError(
            "--env needs --project",
            hint="e.g. nebula notify add ... --project shop --env production",
        )
    channels.check_server(kind, call.ctx.settings)
    with call.ctx.db.transaction() as session:
        project = projects.get(session, slug) if slug is not None else None
        if project is not None:
            channels.check_environment(project, environment)
        added = channels.add(
            session, call.ctx.clock, call.ctx.vault, kind, target, events, project,
            environment, call.who.name,
        )  # fmt: skip
        row = added.channel
        scope = kinds.scope_text(slug, environment)
        text = f"Added {kind.value} channel {row.id} ({row.target}) for {scope}: {row.events}"
        call.audit(session, AdminAction.NOTIFY_ADD, f"channel {row.id}", text, project=project)
        data = {"channel": _channel(row, slug), "signing_secret": added.signing_secret}
    return data


def remove_channel(call: Call) -> Document:
    rights.require_admin(call.who, "remove notification channels")
    channel_id = _id(call)
    with call.ctx.db.transaction() as session:
        row = channels.get(session, channel_id)
        slug = channels.slug_of(session, row)
        shown = _channel(row, slug)
        dropped = channels.remove(session, row)
        text = f"Removed {row.kind} channel {channel_id} ({row.target})"
        call.audit(session, AdminAction.NOTIFY_REMOVE, f"channel {channel_id}", text)
    return {"channel": shown, "removed": True, "dropped": dropped}


def test_channel(call: Call) -> Document:
    """A test notice to one channel, sent now through the outbox (and its record of the last
    delivery or error); tried once: a failed test is not retried later."""
    rights.require_admin(call.who, "test notification channels")
    ctx = call.ctx
    raw = call.param("channel_id")
    channel_id = None if raw == DEFAULT else _id(call)
    key = keys.test(raw, ctx.clock.now().isoformat())
    with ctx.db.transaction() as session:
        if channel_id is None:
            if _default(call, session) is None:
                raise ConflictError(
                    "There is no default Slack channel: NEBULA_SLACK_BOT_TOKEN is not set",
                    hint="list the channels with: nebula notify list",
                )
        else:
            channels.get(session, channel_id)
        payload = {"channel": raw, "by": call.who.name}
        outbox.enqueue(session, ctx.clock, key, Kind.TEST, payload, channel_id=channel_id)
    outbox.deliver_due(ctx, keys=[key])
    with ctx.db.transaction() as session:
        row = session.scalars(
            select(schema.OutboxMessage).where(schema.OutboxMessage.key == key)
        ).one()
        delivered = row.delivered_at is not None
        error = None if delivered else (row.last_error or "not sent")
        if not delivered:
            row.delivered_at = ctx.clock.now()
            row.result = {"skipped": "a test is tried once"}
    return {"channel": raw, "delivered": delivered, "error": error}


def _id(call: Call) -> int:
    raw = call.param("channel_id")
    return parse_id(raw, "notification channel")
