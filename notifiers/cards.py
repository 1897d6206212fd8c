"""Microsoft Teams: the message a Workflows webhook ("When a Teams webhook request is
received", then "Post card in a chat or channel") takes, carrying one Adaptive Card 1.5.

Pure. A TextBlock and a fact render a little markdown, so brackets, emphasis marks and
backslashes from data are escaped there. Only what the published schema allows is set (no
Teams-only ``msteams`` extension: a card that validates is one every host renders).
tests/notifiers validate every card against the published schema.
"""

from __future__ import annotations

import re
from typing import Any

from notifiers.summaries import Summary

CARD = "application/vnd.microsoft.card.adaptive"
SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
VERSION = "1.5"  # the newest Teams renders
_MARKDOWN = re.compile(r"([\\*_\[\]`])")  # emphasis, links, code
_LIST = re.compile(r"(?m)^(\s*)([-+*]|\d+\.)(\s)")  # a line that would start a list


def message(summary: Summary) -> dict[str, Any]:
    return {
        "type": "message",
        "attachments": [{"contentType": CARD, "contentUrl": None, "content": card(summary)}],
    }


def card(summary: Summary) -> dict[str, Any]:
    body: list[dict[str, Any]] = [
        {
            "type": "TextBlock",
            "text": escape(summary.title),
            "weight": "Bolder",
            "size": "Medium",
            "wrap": True,
            "style": "heading",
        },
        {"type": "TextBlock", "text": escape(summary.text), "wrap": True},
    ]
    if summary.facts:
        body.append(
            {
                "type": "FactSet",
                "facts": [{"title": t, "value": escape(v)} for t, v in summary.facts],
            }
        )
    if summary.lines:
        body.append(
            {
                "type": "TextBlock",
                "text": "\n\n".join(escape(line) for line in summary.lines),
                "fontType": "Monospace",
                "wrap": True,
                "spacing": "Medium",
            }
        )
    out: dict[str, Any] = {
        "$schema": SCHEMA,
        "type": "AdaptiveCard",
        "version": VERSION,
        "body": body,
    }
    if summary.link.startswith(("https://", "http://")):
        out["actions"] = [
            {"type": "Action.OpenUrl", "title": summary.link_label, "url": summary.link}
        ]
    return out


def escape(text: str) -> str:
    return _LIST.sub(r"\1\\\2\3", _MARKDOWN.sub(r"\\\1", text))
