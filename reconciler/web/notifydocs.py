"""The documents of notification channels (``nebula notify``), as pydantic models for
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
