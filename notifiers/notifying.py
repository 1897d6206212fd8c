"""The ``Notifier`` interface: what the outbox and the interactions endpoint need from a chat.

One implementation talks to Slack (``notifiers.slack``); tests run it against a local Slack
Web API server rather than replacing it. Failures come back as our own errors: a
``TransientError`` is worth retrying (``RateLimited`` says when), a ``PermanentError`` is
not until someone changes a setting, and ``Unanswered`` means the request may or may not
have reached Slack, so a retry must first look for the message it may have posted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from notifiers.blocks import Block


@dataclass(frozen=True)
class Message:
    """A notification: ``text`` is what phones and screen readers show, ``blocks`` the layout."""

    text: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Posted:
    """Where a message lives: ``chat.update`` needs the channel id and the ts Slack returned."""

    channel: str
    ts: str


class Notifier(Protocol):
    def post(self, channel: str, message: Message, key: str) -> Posted:
        """Post a new message, tagged with ``key`` so that ``find`` can recognise it."""
        ...

    def update(self, posted: Posted, message: Message) -> Posted:
        """Replace a message in place (idempotent: sending the same update twice is harmless)."""
        ...

    def find(self, channel: str, key: str, since: datetime) -> Posted | None:
        """The message tagged ``key`` posted to ``channel`` after ``since``, if there is one."""
        ...

    def respond(self, response_url: str, text: str) -> None:
        """An ephemeral reply, seen only by the person who clicked."""
        ...
