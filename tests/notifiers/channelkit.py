"""Channels made straight in the store for flow tests, and the deliveries they got.

``verify`` checks a webhook delivery with the Standard Webhooks reference library's own
``Webhook.verify``; the library compares the timestamp with its clock, which is set to the
test's fake clock for the call, as a receiver's clock would read at the time of delivery.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, tzinfo
from typing import Any

import standardwebhooks.webhooks as standard

from notifiers import channels as kinds
from reconciler.admin import channels, projects
from reconciler.clock import Clock
from reconciler.context import Context
from reconciler.store import schema
from tests.plugins.receivers import Received, Receiver


def add(
    ctx: Context,
    kind: str,
    target: str,
    *,
    on: str | None = None,
    project: str | None = None,
    environment: str | None = None,
) -> tuple[int, str | None]:
    """A channel as ``nebula notify add`` makes it: its id, and its signing secret."""
    channel_kind = kinds.parse_kind(kind)
    with ctx.db.transaction() as session:
        row = projects.get(session, project) if project is not None else None
        added = channels.add(
            session, ctx.clock, ctx.vault, channel_kind, kinds.parse_target(channel_kind, target),
            kinds.parse_events(on), row, environment, "alice",
        )  # fmt: skip
        return added.channel.id, added.signing_secret


def record(ctx: Context, channel_id: int) -> tuple[datetime | None, str | None]:
    """The channel's last delivery and last error."""
    with ctx.db.reading() as session:
        row = session.get(schema.NotifyChannel, channel_id)
        assert row is not None
        return row.last_delivered_at, row.last_error


@contextmanager
def clock_of_the_receiver(clock: Clock) -> Iterator[None]:
    real = standard.datetime

    class Receiving(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Receiving:  # type: ignore[override]
            at = clock.now().astimezone(tz or UTC)
            return cls.fromtimestamp(at.timestamp(), tz=at.tzinfo)

    standard.datetime = Receiving  # type: ignore[misc]
    try:
        yield
    finally:
        standard.datetime = real  # type: ignore[misc]


def verify(received: Received, secret: str, clock: Clock) -> Any:
    """The body, as the library returns it once the signature and timestamp check out."""
    with clock_of_the_receiver(clock):
        return standard.Webhook(secret).verify(received.body, received.headers)


def verifying(receiver: Receiver, secrets: dict[str, str], clock: Clock) -> None:
    """The receiver verifies each delivery as it arrives, with the secret of its path."""
    receiver.check(lambda received: verify(received, secrets[received.path], clock))


def types(received: list[Received], path: str) -> list[str]:
    return [r.json["type"] for r in received if r.path == path]
