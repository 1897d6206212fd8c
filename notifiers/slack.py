"""The Slack notifier: ``slack_sdk.WebClient`` for the Web API, ``WebhookClient`` for replies.

The one module that sends anything to Slack. The SDK's own retries are turned off: the outbox
decides when to try again (with backoff, after ``Retry-After``), and an automatic resend of a
``chat.postMessage`` whose answer was lost is exactly how a message gets posted twice.
Every post carries its idempotency key as message metadata, so that a retry after a lost
answer can look for it (``conversations.history``) before posting again.
"""

from __future__ import annotations

import http.client
import logging
from datetime import datetime
from typing import Any
from urllib.error import URLError

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web import WebClient
from slack_sdk.webhook import WebhookClient

from notifiers.notifying import Message, Posted
from reconciler.errors import PermanentError, RateLimitedError, TransientError, UnansweredError
from reconciler.settings import Settings

log = logging.getLogger("nebula.slack")
EVENT_TYPE = "nebula_notice"
TIMEOUT = 10  # seconds: a slow Slack delays the next notice, never a deployment
HISTORY_PAGE = 200
# ok:false errors that say "try again later" rather than "change something first".
_TRANSIENT = {
    "ratelimited",
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
}


class SlackNotifier:
    def __init__(self, token: str, base_url: str, *, timeout: int = TIMEOUT) -> None:
        self._client = WebClient(
            token=token,
            base_url=base_url if base_url.endswith("/") else base_url + "/",
            timeout=timeout,
            retry_handlers=[],
            logger=log,
        )
        self._timeout = timeout

    def post(self, channel: str, message: Message, key: str) -> Posted:
        data = self._call(
            "chat.postMessage",
            channel=channel,
            text=message.text,
            blocks=list(message.blocks),
            metadata={"event_type": EVENT_TYPE, "event_payload": {"key": key}},
            unfurl_links=False,
            unfurl_media=False,
        )
        return Posted(str(data["channel"]), str(data["ts"]))

    def update(self, posted: Posted, message: Message) -> Posted:
        data = self._call(
            "chat.update",
            channel=posted.channel,
            ts=posted.ts,
            text=message.text,
            blocks=list(message.blocks),
        )
        return Posted(str(data.get("channel") or posted.channel), str(data.get("ts") or posted.ts))

    def find(self, channel: str, key: str, since: datetime) -> Posted | None:
        data = self._call(
            "conversations.history",
            channel=channel,
            oldest=f"{since.timestamp():.6f}",
            include_all_metadata=True,
            limit=HISTORY_PAGE,
        )
        for item in data.get("messages") or []:
            metadata = item.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if metadata.get("event_type") == EVENT_TYPE and payload.get("key") == key:
                return Posted(channel, str(item["ts"]))
        return None

    def respond(self, response_url: str, text: str) -> None:
        client = WebhookClient(response_url, timeout=self._timeout, retry_handlers=[], logger=log)
        try:
            response = client.send(text=text, response_type="ephemeral", replace_original=False)
        except (OSError, http.client.HTTPException, SlackClientError) as exc:
            raise TransientError(f"Slack's response_url did not answer ({_reason(exc)})") from exc
        if response.status_code != 200:
            raise TransientError(
                f"Slack's response_url answered {response.status_code}", status=response.status_code
            )

    def _call(self, method: str, **arguments: Any) -> dict[str, Any]:
        try:
            if method == "chat.postMessage":
                response = self._client.chat_postMessage(**arguments)
            elif method == "chat.update":
                response = self._client.chat_update(**arguments)
            else:
                response = self._client.conversations_history(**arguments)
        except SlackApiError as exc:
            raise _api_error(method, exc) from exc
        except (TimeoutError, http.client.HTTPException, ConnectionResetError) as exc:
            raise UnansweredError(f"Slack did not answer {method} ({_reason(exc)})") from exc
        except (URLError, OSError, SlackClientError) as exc:
            raise TransientError(f"Slack cannot be reached for {method} ({_reason(exc)})") from exc
        data = response.data
        return data if isinstance(data, dict) else {}


def _api_error(method: str, exc: SlackApiError) -> TransientError | PermanentError:
    response = exc.response
    status = int(getattr(response, "status_code", 0) or 0)
    data = response.data if isinstance(response.data, dict) else {}
    error = str(data.get("error") or f"HTTP {status}")
    if status == 429:
        headers = {k.lower(): v for k, v in (response.headers or {}).items()}
        raw = headers.get("retry-after")
        value = raw[0] if isinstance(raw, list) else raw
        try:
            retry_after = max(float(str(value)), 1.0)
        except (TypeError, ValueError):
            retry_after = 30.0
        return RateLimitedError(
            f"Slack rate-limited {method}: retry after {retry_after:g}s", retry_after
        )
    if status >= 500:
        return TransientError(f"Slack failed {method}: HTTP {status}", code="slack", status=status)
    if error in _TRANSIENT:
        return TransientError(f"Slack failed {method}: {error}", code="slack", status=status)
    return PermanentError(f"Slack refused {method}: {error}", code="slack", status=status)


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc or type(exc).__name__)


def from_settings(settings: Settings) -> SlackNotifier | None:
    """None without ``NEBULA_SLACK_BOT_TOKEN``: notices are recorded but not sent."""
    if not settings.slack_bot_token:
        return None
    return SlackNotifier(settings.slack_bot_token, settings.slack_api_url)
