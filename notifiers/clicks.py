"""Approve and Reject clicked in Slack: the click as Slack reports it, and the answer.

Parsing the interactivity payload is pure; the route that verifies the request and records
the decision is ``reconciler.web.slack``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from notifiers import messages


@dataclass(frozen=True)
class Click:
    """One Approve or Reject click, as Slack reports it."""

    user_id: str
    approve: bool
    value: str
    response_url: str


@dataclass
class Answer:
    ephemeral: str | None = None  # why nothing changed, for the person who clicked only
    deliver: list[str] = field(default_factory=list)  # outbox keys worth sending right away


def parse(body: bytes) -> Click | None:
    """The click in a ``block_actions`` payload; None for anything else."""
    try:
        form = parse_qs(body.decode("utf-8"), strict_parsing=True)
        payload: Any = json.loads(form["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError) as exc:
        raise ValueError("Expected a form body with a JSON payload field") from exc
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return None
    for action in payload.get("actions") or []:
        if not isinstance(action, dict):
            continue
        action_id = action.get("action_id")
        if action_id in (messages.APPROVE, messages.REJECT):
            user = payload.get("user") or {}
            return Click(
                user_id=str(user.get("id") or ""),
                approve=action_id == messages.APPROVE,
                value=str(action.get("value") or ""),
                response_url=str(payload.get("response_url") or ""),
            )
    return None
