"""Members and tokens made directly in the store, for tests that set up a world before they
act through a surface (the CLI, the API, Slack)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from reconciler.admin import members, tokens
from reconciler.clock import Clock
from reconciler.store import schema


def member(
    session: Session, clock: Clock, name: str, role: str, slack_id: str | None = None
) -> schema.Member:
    identity = members.Identity(slack_id=slack_id)
    return members.add(session, clock, name, members.parse_role(role), identity)


def token(session: Session, clock: Clock, name: str) -> str:
    """A new API token of the member ``name`` (its text: only its hash is stored)."""
    return tokens.create(session, clock, members.get(session, name))[1]


def bearer(session: Session, clock: Clock, token_text: str) -> str:
    """The name of the member a token acts as (``UnauthorizedError`` for a bad one)."""
    return tokens.verify(session, clock, token_text).member.name
