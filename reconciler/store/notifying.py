"""The notification channels' table (``schema`` names it with the rest): where notices go
besides the default Slack channel of the settings, for which scope and which events; and
which items of their inbox each member has read (``InboxRead``).

A channel's secrets (a routing key, a URL with its token, a webhook's signing secret) are
one JSON document encrypted with the vault (``secrets``); ``target`` is what may be shown.
The last delivery and the last error are the deliverer's, for ``nebula notify list``.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from reconciler.store.base import Base


class NotifyChannel(Base):
    __tablename__ = "notify_channels"
    __table_args__ = (Index("ix_notify_channels_project", "project_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))  # slack | pagerduty | teams | email | webhook
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id"))  # null: everywhere
    environment: Mapped[str | None] = mapped_column(String(100))  # null: the whole project
    events: Mapped[str] = mapped_column(String(100))  # approval,failure,drift,...
    target: Mapped[str] = mapped_column(String(2000))  # as shown: never a secret
    address: Mapped[str | None] = mapped_column(Text)  # a Slack channel id, e-mail addresses
    secrets: Mapped[bytes | None] = mapped_column(LargeBinary)  # encrypted JSON
    created_at: Mapped[datetime]
    created_by: Mapped[str] = mapped_column(String(100))
    last_delivered_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    last_error_at: Mapped[datetime | None]


class InboxRead(Base):
    """A member read an item of their inbox (``approval-12``, ``decision-12``, ``failure-40``).

    The items themselves are not stored: they are read from the approvals and deployments
    that caused them (``admin.inbox``), so they exist exactly when their cause was
    committed. Only what a member read is theirs to keep. ``member`` is a name, not a row:
    the store's operator (``local-admin``) has an inbox too. ``project_id``: the project the
    item is about, so that forgetting a project forgets its marks (its ids may come back).
    """

    __tablename__ = "inbox_reads"
    __table_args__ = (Index("ix_inbox_reads_project", "project_id"),)
    member: Mapped[str] = mapped_column(String(100), primary_key=True)
    item: Mapped[str] = mapped_column(String(40), primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    read_at: Mapped[datetime]
