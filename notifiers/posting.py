"""One HTTP POST to a channel (a webhook, PagerDuty's Events API, a Teams workflow), and
what its answer means for the outbox, as our own errors:

- 2xx: delivered;
- 429: ``RateLimitedError`` with the ``Retry-After`` it gave (seconds or a date);
- 408, 5xx, a refused or dropped connection: ``TransientError``; no answer in time:
  ``UnansweredError`` (sending again is safe: receivers de-duplicate by ``webhook-id`` or
  ``dedup_key``);
- any other answer, a redirect included (never followed): ``PermanentError``.

A URL here is a secret (its path or query holds the token), so no message names it: the
channel is named by what it is (``the webhook``), and a library's error text is cleaned of
the URL before it is kept.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

import reconciler
from notifiers import webhooks
from reconciler.errors import PermanentError, RateLimitedError, TransientError, UnansweredError

log = logging.getLogger("nebula.outbox")
TIMEOUT = httpx.Timeout(10.0, connect=5.0)  # a slow channel delays its notices, nothing else
RETRY_AFTER = (1.0, 3600.0)  # what a Retry-After is held to
USER_AGENT = f"Nebula/{reconciler.__version__}"


@dataclass(frozen=True)
class Request:
    what: str  # "the webhook", "PagerDuty", "the Teams workflow": named in errors
    url: str = field(repr=False)
    body: bytes = field(repr=False)
    signing_secret: str | None = field(default=None, repr=False)  # whsec_: Standard Webhooks
    message_id: str | None = None


def post(request: Request, now: datetime) -> dict[str, Any]:
    headers = {"content-type": "application/json", "user-agent": USER_AGENT}
    if request.signing_secret is not None and request.message_id is not None:
        headers |= webhooks.headers(request.message_id, now, request.body, request.signing_secret)
    try:
        with httpx.Client(timeout=TIMEOUT, follow_redirects=False, trust_env=False) as client:
            response = client.post(request.url, content=request.body, headers=headers)
    except httpx.TimeoutException as exc:
        if isinstance(exc, httpx.ConnectTimeout):
            raise TransientError(f"{request.what} did not accept a connection in time") from exc
        raise UnansweredError(f"{request.what} did not answer in time") from exc
    except httpx.RemoteProtocolError as exc:
        raise UnansweredError(f"{request.what} closed the connection without answering") from exc
    except httpx.HTTPError as exc:
        raise TransientError(
            f"{request.what} cannot be reached ({_reason(exc, request.url)})"
        ) from exc
    status = response.status_code
    if 200 <= status < 300:
        return {"status": status, **({"id": request.message_id} if request.message_id else {})}
    if status == 429:
        wait = retry_after(response.headers.get("retry-after"), now)
        raise RateLimitedError(
            f"{request.what} rate-limited the notice: retry after {wait:g}s", wait
        )
    if status >= 500 or status == 408:
        raise TransientError(f"{request.what} answered HTTP {status}", status=status)
    if 300 <= status < 400:
        raise PermanentError(
            f"{request.what} answered HTTP {status} (a redirect; Nebula does not follow them)",
            status=status,
        )
    raise PermanentError(f"{request.what} refused the notice: HTTP {status}", status=status)


def retry_after(value: str | None, now: datetime) -> float:
    """Seconds, or an HTTP date; 30s when it says neither."""
    least, most = RETRY_AFTER
    if not value:
        return 30.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(value) - now).total_seconds()
        except (TypeError, ValueError, OverflowError):
            return 30.0
    return min(max(seconds, least), most)


def _reason(exc: BaseException, url: str) -> str:
    """The library's words without the URL or any part of it that may hold a token."""
    text = str(exc) or type(exc).__name__
    parts = urlsplit(url)
    for secret in (url, parts.path, parts.query, parts.password or "", parts.username or ""):
        if len(secret) > 1:
            text = text.replace(secret, "…")
    return text[:200]
