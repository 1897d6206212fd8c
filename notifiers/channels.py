"""Notification channels as people give them: a kind, a target, a scope and the events it wants.

Pure: parsing and checking what ``nebula notify add`` was given, and how a channel is shown.
Every refusal is one line naming the problem, with a hint, before anything is stored. A
channel's secrets (a PagerDuty routing key, a Teams or webhook URL, which carry their tokens
in them, a webhook's ``whsec_`` signing secret) are kept apart from what is shown: ``shown``
is all ``nebula notify list`` ever prints of a target.
"""

from __future__ import annotations

import base64
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from reconciler.errors import ConfigurationError, shown


class ChannelKind(StrEnum):
    SLACK = "slack"
    PAGERDUTY = "pagerduty"
    TEAMS = "teams"
    EMAIL = "email"
    WEBHOOK = "webhook"


class Event(StrEnum):
    """What a channel may ask for (behaviour.md "Notifications (1.2)")."""

    APPROVAL = "approval"  # requested, decided, expired
    FAILURE = "failure"  # a deployment ended failed
    DRIFT = "drift"  # an episode started, or cleared
    HEALTHY = "healthy"  # a deployment went healthy
    BLOCKED = "blocked"  # a project got a blocker


DEFAULT_EVENTS = (Event.APPROVAL, Event.FAILURE, Event.DRIFT)
# What Slack was sent before channels existed: the default Slack channel keeps it.
SLACK_DEFAULT_EVENTS = (Event.APPROVAL, Event.FAILURE, Event.DRIFT, Event.BLOCKED)
DEFAULT_ID = "default"  # the Slack channel of the settings (NEBULA_SLACK_*), not a stored one
SECRET_PREFIX = "whsec_"
ORGANIZATION = "organization"

_SLACK_CHANNEL = re.compile(r"[CGD][A-Z0-9]{5,20}")
_ROUTING_KEY = re.compile(r"[A-Za-z0-9]{32}")
_ADDRESS = re.compile(
    r"[^@\s,<>\"()\[\]\\;:]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})\.[A-Za-z]{2,63}"
)
_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")
MAX_URL = 2000
MAX_ADDRESSES = 50


@dataclass(frozen=True)
class Target:
    """What a channel sends to: ``address`` is stored in the clear (a Slack channel id, e-mail
    addresses), ``secret`` encrypted (a routing key, a URL); ``shown`` is what is printed."""

    shown: str
    address: str | None = None
    secret: str | None = None


def parse_events(text: str | None) -> tuple[Event, ...]:
    """``approval,failure`` -> the events, in the order the spec lists them; None: defaults."""
    if text is None:
        return DEFAULT_EVENTS
    names = [name.strip().lower() for name in text.split(",")]
    known = [e.value for e in Event]
    wanted = set()
    for name in names:
        if name not in known:
            raise ConfigurationError(
                f"--on: unknown event {shown(name, 40)}", hint=f"events are {','.join(known)}"
            )
        wanted.add(Event(name))
    return tuple(e for e in Event if e in wanted)


def events_text(events: tuple[Event, ...]) -> str:
    return ",".join(e.value for e in events)


def stored_events(text: str) -> tuple[Event, ...]:
    known = {e.value for e in Event}
    return tuple(Event(name) for name in text.split(",") if name in known)


def parse_kind(text: str) -> ChannelKind:
    try:
        return ChannelKind(text)
    except ValueError:
        known = "|".join(k.value for k in ChannelKind)
        raise ConfigurationError(
            f"unknown channel kind {shown(text, 40)}", hint=f"one of {known}"
        ) from None


def parse_target(kind: ChannelKind, text: str) -> Target:
    """Check ``text`` for ``kind``; the one-line refusal says what a good one looks like."""
    text = text.strip()
    if kind is ChannelKind.SLACK:
        if not _SLACK_CHANNEL.fullmatch(text):
            raise ConfigurationError(
                "slack: TARGET must be a Slack channel id, like C0123456789",
                hint="copy it from the channel's details in Slack (a name like #deploys is not an id)",
            )
        return Target(shown=text, address=text)
    if kind is ChannelKind.PAGERDUTY:
        if not _ROUTING_KEY.fullmatch(text):
            raise ConfigurationError(
                "pagerduty: the routing key must be 32 letters and digits (an Events API v2 "
                "integration key)",
                hint="copy the Integration Key of the service's Events API v2 integration; "
                "pipe it in: nebula notify add pagerduty - < key.txt",
            )
        return Target(shown="routing key (hidden)", secret=text)
    if kind is ChannelKind.EMAIL:
        addresses = parse_addresses(text)
        return Target(shown=",".join(addresses), address=",".join(addresses))
    url = parse_url(kind, text)
    return Target(shown=redact_url(url), secret=url)


def parse_addresses(text: str) -> tuple[str, ...]:
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise ConfigurationError(
            "email: TARGET must be e-mail addresses separated by commas",
            hint="e.g. ops@example.com,oncall@example.com",
        )
    if len(parts) > MAX_ADDRESSES:
        raise ConfigurationError(f"email: at most {MAX_ADDRESSES} addresses in one channel")
    for part in parts:
        if not _ADDRESS.fullmatch(part):
            raise ConfigurationError(
                f"email: {shown(part)} is not an e-mail address",
                hint="write it as name@example.com",
            )
    return tuple(dict.fromkeys(parts))


def parse_url(kind: ChannelKind, text: str) -> str:
    what = "a Teams workflow URL" if kind is ChannelKind.TEAMS else "a webhook URL"
    hint = (
        "copy the URL of the workflow's 'When a Teams webhook request is received' trigger"
        if kind is ChannelKind.TEAMS
        else "e.g. https://hooks.example.com/nebula"
    )
    if len(text) > MAX_URL or _CONTROL.search(text):
        raise ConfigurationError(f"{kind}: TARGET must be {what} (no spaces)", hint=hint)
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ConfigurationError(f"{kind}: TARGET is not {what}", hint=hint) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"{kind}: TARGET must be {what} starting with https:// (or http://) and naming a host",
            hint=hint,
        )
    if parts.fragment or (port is not None and port == 0):
        raise ConfigurationError(f"{kind}: TARGET is not {what}", hint=hint)
    return text


def redact_url(url: str) -> str:
    """``https://***@hooks.example.com/…``: the scheme and host, never a path, query or
    credentials (Teams and most webhook URLs carry their token in one of those)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    who = "***@" if parts.username is not None or parts.password is not None else ""
    rest = "/…" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{who}{host}{port}{rest}"


def new_signing_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def scope_text(project: str | None, environment: str | None) -> str:
    if project is None:
        return ORGANIZATION
    return project if environment is None else f"{project}/{environment}"
