"""Approve and Reject clicked in Slack: the click as Slack reports it, and the answer.

Parsing the interactivity payload is pure; the route that verifies the request and records
the decision is ``reconciler.web.slack``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from notifiers import messages


@dataclass(frozen=True)
class Click:
    """One Approve or Reject click, as Slack reports it."""

    user_id: str
    approve: bool
    value: str
    response_url: str


SLACK_ANSWERS = "https://hooks.slack.com/"  # where Slack's response_url always points


def answerable(response_url: str, api_url: str) -> bool:
    """Whether Nebula may post its answer to ``response_url``: Slack's own address for
    answers, or the host of the configured Web API (a proxy, a test's Slack). A signed click
    is still only as trustworthy as its signing secret: a URL elsewhere is not followed, so a
    leaked secret cannot make Nebula post to an address inside its network."""
    if response_url.startswith(SLACK_ANSWERS):
        return True
    given, api = urlsplit(response_url), urlsplit(api_url)
    return bool(api.netloc) and (given.scheme, given.netloc) == (api.scheme, api.netloc)


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
