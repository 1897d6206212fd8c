"""The status page's Jinja2 environment: autoescaped, strict about undefined names.

Filters turn the API's ISO times into what a person reads ("3 min ago" next to
"2026-01-05 12:00 UTC") and long image references into something that fits a phone.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).parent / "templates"

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def parse_time(value: str | datetime | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def relative(value: str | datetime | None, now: datetime) -> str:
    """``just now``, ``5 s ago``, ``3 min ago``, ``2 h ago``, ``4 d ago``; ``in 3 h`` ahead."""
    when = parse_time(value)
    if when is None:
        return "never"
    seconds = int((now - when).total_seconds())
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 5:
        return "just now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min"), (1, "s")):
        if seconds >= size:
            amount = f"{seconds // size} {unit}"
            return f"in {amount}" if ahead else f"{amount} ago"
    return "just now"


def absolute(value: str | datetime | None) -> str:
    when = parse_time(value)
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if when else ""


def iso(value: str | datetime | None) -> str:
    when = parse_time(value)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when else ""


def short_sha(value: str | None) -> str:
    return value[:7] if value else "-"


def short_image(value: str | None) -> str:
    """``reg.example.com/shop/api@sha256:98180510e6eb…``: the digest cut to 12 hex digits."""
    if not value:
        return "-"
    name, sep, digest = value.partition("@")
    if sep and digest.startswith("sha256:") and len(digest) > 19:
        return f"{name}@{digest[:19]}…"
    return value


_DIGEST = re.compile(r"(sha256:[0-9a-f]{12})[0-9a-f]{52}")


def short_digests(text: str) -> str:
    """Every 64-digit sha256 digest in ``text`` cut to 12 digits and ``…`` (the element's
    title keeps the whole value), so a cell stays short on a phone."""
    return _DIGEST.sub(r"\1…", text)


def shown(value: Any) -> str:
    """A change-set value as text: strings as they are, ``(none)`` for absent."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


_env.filters.update(
    absolute=absolute,
    iso=iso,
    short_sha=short_sha,
    short_image=short_image,
    short_digests=short_digests,
    shown=shown,
)
_env.globals.update(relative=relative)


def render(name: str, **context: Any) -> str:
    context.setdefault("now", datetime.now(UTC))
    context.setdefault("refresh", 0)
    context.setdefault("crumbs", [])
    context.setdefault("reconciler", None)  # (an error page does not read the heartbeat)
    context.setdefault("viewer", None)  # (nor who is signed in)
    return _env.get_template(name).render(**context)
