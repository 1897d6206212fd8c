"""Block Kit, built from small functions that return plain dicts: no JSON is spliced by hand.

Slack rejects a whole message (``invalid_blocks``) when one text is too long, so every
builder cuts its text to Slack's documented limit instead of trusting the caller; a notice
that says a little less is better than one that never arrives. Texts shown as ``mrkdwn`` go
through ``escape`` first: a value from nebula.toml such as ``<!channel>`` must not ping anyone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

Block = dict[str, Any]

SECTION_TEXT = 3000
FIELD_TEXT = 2000
HEADER_TEXT = 150
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
CONTEXT_ELEMENTS = 10
SECTION_FIELDS = 10
MESSAGE_TEXT = 3000  # the notification fallback; Slack allows more, people read less
ELLIPSIS = "…"


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn: ``&``, ``<`` and ``>``."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS


def code(text: str) -> str:
    """Inline code; backticks inside would end it early, so they become quotes."""
    inner = escape(text).replace("`", "'")
    return f"`{inner}`"


def preformatted(lines: Iterable[str], limit: int = SECTION_TEXT) -> str:
    """A code block of escaped lines, cut at a whole line so it never ends half open."""
    body = ""
    for line in lines:
        candidate = escape(line).replace("```", "'''")
        if len(body) + len(candidate) + 8 > limit:
            body += ELLIPSIS + "\n"
            break
        body += candidate + "\n"
    return f"```\n{body.rstrip(chr(10))}\n```"


def link(url: str, label: str) -> str:
    """``<url|label>``; a URL holding ``|`` or ``>`` would break out of it, so it is refused."""
    if not url.startswith(("http://", "https://")) or any(c in url for c in "|<> "):
        return escape(label)
    return f"<{url}|{escape(label)}>"


def plain(text: str, limit: int = SECTION_TEXT) -> dict[str, Any]:
    return {"type": "plain_text", "text": cut(text, limit) or " ", "emoji": True}


def mrkdwn(text: str, limit: int = SECTION_TEXT) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": cut(text, limit) or " "}


def header(text: str) -> Block:
    return {"type": "header", "text": plain(text, HEADER_TEXT)}


def section(text: str | None = None, *, fields: Iterable[str] = (), block_id: str = "") -> Block:
    block: Block = {"type": "section"}
    if text is not None:
        block["text"] = mrkdwn(text)
    shown = [mrkdwn(f, FIELD_TEXT) for f in fields][:SECTION_FIELDS]
    if shown:
        block["fields"] = shown
    if block_id:
        block["block_id"] = block_id
    return block


def context(*texts: str) -> Block:
    return {
        "type": "context",
        "elements": [mrkdwn(t, SECTION_TEXT) for t in texts if t][:CONTEXT_ELEMENTS],
    }


def button(
    text: str,
    action_id: str,
    value: str,
    style: Literal["primary", "danger"] | None = None,
) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "text": plain(text, BUTTON_TEXT),
        "action_id": action_id,
        "value": cut(value, BUTTON_VALUE),
    }
    if style is not None:
        element["style"] = style
    return element


def actions(block_id: str, *elements: dict[str, Any]) -> Block:
    return {"type": "actions", "block_id": block_id, "elements": list(elements)}
