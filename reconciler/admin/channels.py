"""Notification channels in the store: added (their secrets encrypted with the vault), listed
(never a secret: the target as ``channels.Target.shown`` made it), removed with the notices
still waiting for them, and forgotten with their project.

Who may change them is ``core.rights``'s decision (an admin or an owner), made by the act; a
channel of a kind the server cannot send (Slack without a bot token, e-mail without an SMTP
server) is refused when it is added rather than failing at its first notice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from notifiers import channels
from notifiers.channels import ChannelKind, Event
from reconciler.clock import Clock
from reconciler.errors import ConfigurationError, NotFoundError, shown
from reconciler.settings import Settings
from reconciler.store import schema
from reconciler.store.crypto import Vault

Channel = schema.NotifyChannel


@dataclass(frozen=True)
class Added:
    channel: Channel
    signing_secret: str | None  # a webhook's, shown this once


def check_environment(project: schema.Project, environment: str | None) -> None:
    """An environment the project's file does not name is a typo, once the file is known."""
    known = [e.name for e in project.environments]
    if environment is not None and known and environment not in known:
        raise NotFoundError(
            f"{project.slug} has no environment {shown(environment)}",
            hint=f"its environments: {', '.join(known)}",
        )


def check_server(kind: ChannelKind, settings: Settings) -> None:
    if kind is ChannelKind.SLACK and not settings.slack_bot_token:
        raise ConfigurationError(
            "slack channels need NEBULA_SLACK_BOT_TOKEN on the server",
            hint="set it where nebula serve runs, then add the channel",
        )
    if kind is ChannelKind.EMAIL and not settings.smtp_url:
        raise ConfigurationError(
            "email channels need NEBULA_SMTP_URL on the server",
            hint="set it where nebula serve runs, e.g. smtp://user:password@mail.example.com:587",
        )


def add(
    session: Session,
    clock: Clock,
    vault: Vault,
    kind: ChannelKind,
    target: channels.Target,
    events: tuple[Event, ...],
    project: schema.Project | None,
    environment: str | None,
    by: str,
) -> Added:
    secrets: dict[str, str] = {}
    signing = None
    if kind is ChannelKind.PAGERDUTY and target.secret is not None:
        secrets["routing_key"] = target.secret
    elif target.secret is not None:
        secrets["url"] = target.secret
    if kind is ChannelKind.WEBHOOK:
        signing = secrets["signing_secret"] = channels.new_signing_secret()
    row = Channel(
        kind=kind.value,
        project_id=project.id if project is not None else None,
        environment=environment,
        events=channels.events_text(events),
        target=target.shown,
        address=target.address,
        secrets=vault.encrypt(json.dumps(secrets)) if secrets else None,
        created_at=clock.now(),
        created_by=by,
    )
    session.add(row)
    session.flush()
    return Added(row, signing)


def listing(session: Session) -> list[tuple[Channel, str | None]]:
    """Every channel, oldest first, with its project's slug."""
    found = session.execute(
        select(Channel, schema.Project.slug)
        .outerjoin(schema.Project, schema.Project.id == Channel.project_id)
        .order_by(Channel.id)
    )
    return [(r[0], r[1]) for r in found]


def get(session: Session, channel_id: int) -> Channel:
    row = session.get(Channel, channel_id)
    if row is None:
        raise NotFoundError(
            f"No notification channel {channel_id}", hint="list them with: nebula notify list"
        )
    return row


def slug_of(session: Session, row: Channel) -> str | None:
    if row.project_id is None:
        return None
    project = session.get(schema.Project, row.project_id)
    return project.slug if project is not None else None


def remove(session: Session, row: Channel) -> int:
    """The channel and the notices still waiting for it; returns how many were dropped."""
    dropped = session.execute(
        delete(schema.OutboxMessage).where(
            schema.OutboxMessage.channel_id == row.id,
            schema.OutboxMessage.delivered_at.is_(None),
        )
    ).rowcount  # type: ignore[attr-defined]
    session.delete(row)
    session.flush()
    return int(dropped or 0)


def forget_project(session: Session, project_id: int) -> None:
    for row in session.scalars(select(Channel).where(Channel.project_id == project_id)):
        remove(session, row)
