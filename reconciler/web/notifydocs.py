"""The documents of notification channels (``nebula notify``) and of a member's inbox
(``nebula inbox``), as pydantic models for
``/openapi.json``. Like ``models``, they allow more fields than they declare; none holds a
secret but ``ChannelAdded.signing_secret``, answered once.
"""

from __future__ import annotations

from pydantic import Field

from reconciler.web.models import Out


class Channel(Out):
    id: str = Field(description="a number, or default: the Slack channel of the settings")
    kind: str = Field(description="slack, pagerduty, teams, email or webhook")
    scope: str = Field(description="organization, a project, or project/environment")
    project: str | None
    environment: str | None
    events: list[str] = Field(description="approval, failure, drift, healthy, blocked")
    target: str = Field(description="where it goes, redacted: never a key, a token or a path")
    last_delivery: str | None
    last_error: str | None
    last_error_at: str | None


class ChannelList(Out):
    channels: list[Channel]


class ChannelAdded(Out):
    channel: Channel
    signing_secret: str | None = Field(
        description="a webhook's whsec_ secret: shown this once, stored encrypted"
    )


class ChannelRemoved(Out):
    channel: Channel
    removed: bool
    dropped: int = Field(description="notices that were still waiting for it")


class ChannelTested(Out):
    channel: str
    delivered: bool
    error: str | None = Field(description="why the test did not arrive")


class InboxItem(Out):
    id: str = Field(description="approval-N (to decide), decision-N (on your request), failure-N")
    kind: str = Field(description="approval, decision or failure")
    project: str
    environment: str
    service: str | None = Field(description="the service, where the item is about one")
    summary: str
    link: str = Field(description="the approval on the approvals page, or the deployment's page")
    created_at: str | None = Field(description="requested, decided, or failed then")
    read: bool
    approval_id: str | None
    deployment_id: str | None


class InboxList(Out):
    items: list[InboxItem] = Field(description="newest first")
    unread: int = Field(description="unread items in the whole inbox (with unread=true too)")


class InboxMarked(Out):
    marked: list[str] = Field(description="the items that were unread and now are read")
    unread: int = Field(description="unread items left")
