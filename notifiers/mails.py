"""E-mail: one message per notice and channel, to the channel's addresses, with a plain text
part and an HTML one, and headers people filter on: ``List-Id`` (one list per project:
``<shop.nebula.example.com>``), ``X-Nebula-Event`` (the webhook type names), and
``Auto-Submitted`` so that nobody's vacation reply answers Nebula.

Pure: ``message`` builds the ``EmailMessage``; ``smtp`` sends it. Its ``Message-ID`` comes
from the outbox key, so a retry is the same message to a receiving server that kept it.
"""

from __future__ import annotations

import hashlib
import html
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime
from urllib.parse import urlsplit

from notifiers.summaries import Summary


def list_id(summary: Summary, public_url: str) -> str:
    host = urlsplit(public_url).hostname or "nebula.invalid"
    name = f"Nebula {summary.project}" if summary.project else "Nebula"
    where = f"{summary.project}.nebula.{host}" if summary.project else f"nebula.{host}"
    return f"{name} <{where}>"


def message(
    summary: Summary,
    *,
    sender: str,
    recipients: tuple[str, ...],
    key: str,
    event: str,
    public_url: str,
    at: datetime,
) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = f"[Nebula] {summary.title}"
    mail["From"] = sender
    mail["To"] = ", ".join(recipients)
    mail["Date"] = format_datetime(at)
    host = urlsplit(public_url).hostname or "nebula.invalid"
    mail["Message-ID"] = f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@{host}>"
    mail["List-Id"] = list_id(summary, public_url)
    mail["X-Nebula-Event"] = event
    mail["Auto-Submitted"] = "auto-generated"
    mail.set_content(text(summary))
    mail.add_alternative(page(summary), subtype="html")
    return mail


def text(summary: Summary) -> str:
    out = [summary.title, "", summary.text, ""]
    out += [f"{title}: {value}" for title, value in summary.facts]
    if summary.lines:
        out += ["", *(f"  {line}" for line in summary.lines)]
    out += ["", f"{summary.link_label}: {summary.link}", ""]
    return "\n".join(out)


def page(summary: Summary) -> str:
    e = html.escape
    rows = "".join(
        f'<tr><th align="left">{e(t)}</th><td>{e(v)}</td></tr>' for t, v in summary.facts
    )
    lines = f"<pre>{e(chr(10).join(summary.lines))}</pre>" if summary.lines else ""
    link = (
        f'<p><a href="{e(summary.link)}">{e(summary.link_label)}</a></p>'
        if summary.link.startswith(("https://", "http://"))
        else ""
    )
    return (
        "<!doctype html><html><body>"
        f"<h2>{e(summary.title)}</h2><p>{e(summary.text)}</p>"
        f"<table>{rows}</table>{lines}{link}"
        "</body></html>\n"
    )
