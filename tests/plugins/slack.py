"""A local Slack: the Web API methods Nebula calls, ``response_url``, and signed interactions.

Fixtures:

- ``slack_server``: a ``SlackServer`` on a free loopback port, fresh for each test. Point
  ``WebClient(base_url=slack_server.base_url)`` (or ``NEBULA_SLACK_API_URL``) at it, with
  the token ``SLACK_TOKEN``. It keeps the channel's messages (``chat.postMessage``,
  ``chat.update``, ``conversations.history`` with metadata) and records every call, JSON or
  form-encoded. On demand it answers ``ok: false``, 429 with ``Retry-After``, 500, goes down
  altogether (``outage()``), or posts and then drops the connection before answering.
- ``slack_interaction(...)``, ``signed_headers(...)``: interactivity requests signed exactly
  as Slack signs them: ``v0=hex(HMAC-SHA256(secret, "v0:{timestamp}:{body}"))``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.infra.quiet import QuietHandler

SLACK_TOKEN = "xoxb-test-7d41c9e0a3b2"
SLACK_SIGNING_SECRET = "slack-signing-secret-5e8f1a2b"
CHANNEL_ID = "C0NEBULA01"


@dataclass
class Call:
    method: str  # chat.postMessage, chat.update, conversations.history, or "response_url"
    args: dict[str, Any]
    authorized: bool
    content_type: str


@dataclass
class Fault:
    status: int = 500  # 200 with neither error nor drop_after: a success (after ``delay``)
    error: str | None = None  # with status 200: {"ok": false, "error": ...}
    retry_after: int | None = None
    drop_after: bool = False  # do the work, then close the connection without answering
    delay: float = 0.0  # seconds before answering: a slow Slack


@dataclass
class _State:
    token: str
    calls: list[Call] = field(default_factory=list)
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    faults: dict[str, list[Fault]] = field(default_factory=dict)
    outage: Fault | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    ts: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    now: Callable[[], float] = time.time  # Slack's clock: a message's ts is its time


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"
    server: _Httpd

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip()
        args = _args(url.query, raw, content_type)
        state = self.server.state
        if url.path.startswith("/actions/"):
            with state.lock:
                state.calls.append(Call("response_url", args, True, content_type))
            self._reply(200, b"ok", "text/plain")
            return
        method = url.path.rsplit("/", 1)[-1]
        authorized = self.headers.get("Authorization", "") == f"Bearer {state.token}"
        with state.lock:
            state.calls.append(Call(method, args, authorized, content_type))
            queue = state.faults.get(method)
            fault = state.outage or (queue.pop(0) if queue else None)
        if fault is not None:
            time.sleep(fault.delay)
            failing = fault.status != 200 or fault.error is not None
            if failing and not fault.drop_after:
                self._fault(fault)
                return
        if not authorized:
            self._json(200, {"ok": False, "error": "invalid_auth"})
            return
        answer = self._api(method, args)
        if fault is not None and fault.drop_after:  # the work is done, the answer is lost
            self.close_connection = True
            self.connection.close()
            return
        self._json(200, answer)

    do_POST = do_GET

    def _api(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        state = self.server.state
        channel = str(args.get("channel") or "")
        channel_id = CHANNEL_ID if channel.startswith("#") else channel
        with state.lock:
            if method == "chat.postMessage":
                ts = f"{int(state.now())}.{next(state.ts):06d}"
                message = {"ts": ts, **_message(args)}
                state.messages[(channel_id, ts)] = message
                return {"ok": True, "channel": channel_id, "ts": ts, "message": message}
            if method == "chat.update":
                key = (channel_id, str(args.get("ts")))
                if key not in state.messages:
                    return {"ok": False, "error": "message_not_found"}
                state.messages[key] = {**state.messages[key], **_message(args), "edited": True}
                return {"ok": True, "channel": channel_id, "ts": key[1]}
            if method == "conversations.history":
                if channel.startswith("#"):
                    return {"ok": False, "error": "channel_not_found"}
                oldest = float(args.get("oldest") or 0)
                with_metadata = str(args.get("include_all_metadata")).lower() in ("1", "true")
                found = [
                    {k: v for k, v in m.items() if k != "metadata" or with_metadata}
                    for (c, ts), m in sorted(state.messages.items(), reverse=True)
                    if c == channel_id and float(ts) >= oldest
                ]
                return {"ok": True, "messages": found, "has_more": False}
        return {"ok": False, "error": "unknown_method"}

    def _fault(self, fault: Fault) -> None:
        if fault.status == 429:
            headers = {
                "Retry-After": str(fault.retry_after if fault.retry_after is not None else 1)
            }
            self._json(429, {"ok": False, "error": "ratelimited"}, headers)
        elif fault.status >= 500:
            self._reply(fault.status, b"<html>Slack is having trouble</html>", "text/html")
        else:
            self._json(fault.status, {"ok": False, "error": fault.error or "fatal_error"})

    def _json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._reply(status, json.dumps(body).encode(), "application/json", headers)

    def _reply(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        content = ("Content-Type", f"{content_type}; charset=utf-8")
        self.answer(status, body, [content, *(headers or {}).items()])


def _args(query: str, raw: bytes, content_type: str) -> dict[str, Any]:
    args: dict[str, Any] = {k: v[-1] for k, v in parse_qs(query).items()}
    if content_type == "application/json" and raw:
        args.update(json.loads(raw))
    elif raw:
        args.update({k: v[-1] for k, v in parse_qs(raw.decode()).items()})
    for name in ("blocks", "metadata"):  # form bodies carry these as JSON text
        if isinstance(args.get(name), str):
            args[name] = json.loads(args[name])
    return args


def _message(args: dict[str, Any]) -> dict[str, Any]:
    return {k: args[k] for k in ("text", "blocks", "metadata") if k in args}


class SlackServer:
    def __init__(self, token: str = SLACK_TOKEN) -> None:
        self._server = _Httpd(("127.0.0.1", 0), _Handler)
        self._server.state = _State(token)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def response_url(self, name: str = "T1/B1/x") -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/actions/{name}"

    # -- what happened ----------------------------------------------------------------

    @property
    def calls(self) -> list[Call]:
        with self._server.state.lock:
            return list(self._server.state.calls)

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    @property
    def posts(self) -> list[Call]:
        return self.calls_to("chat.postMessage")

    @property
    def updates(self) -> list[Call]:
        return self.calls_to("chat.update")

    @property
    def responses(self) -> list[Call]:
        return self.calls_to("response_url")

    @property
    def messages(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The channel as people see it now: ``(channel, ts) -> message``."""
        with self._server.state.lock:
            return dict(self._server.state.messages)

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        return self.messages[(channel, ts)]

    # -- trouble on demand ------------------------------------------------------------

    def fail(self, method: str, fault: Fault | None = None, *, times: int = 1) -> None:
        """The next ``times`` calls to ``method`` get ``fault`` (default: a 500)."""
        with self._server.state.lock:
            queue = self._server.state.faults.setdefault(method, [])
            queue.extend([fault or Fault()] * times)

    def outage(self, fault: Fault | None = None) -> None:
        """Every API call fails (default: 503) until ``restore``."""
        self._server.state.outage = fault or Fault(status=503)

    def restore(self) -> None:
        self._server.state.outage = None

    def use_clock(self, now: Callable[[], float]) -> None:
        """Stamp messages with the test's clock (epoch seconds), as Slack stamps them with its own."""
        self._server.state.now = now

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def slack_server() -> Iterator[SlackServer]:
    server = SlackServer()
    yield server
    server.stop()


# -- interactivity requests, as Slack sends and signs them --------------------------------


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    body: bytes, timestamp: int, secret: str = SLACK_SIGNING_SECRET
) -> dict[str, str]:
    stamp = str(timestamp)
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature(secret, stamp, body),
    }


def slack_interaction(
    *,
    user: str,
    action: str,
    value: str,
    response_url: str,
    channel: str = CHANNEL_ID,
    message_ts: str = "1767600000.000001",
) -> bytes:
    """A ``block_actions`` payload, form-encoded as Slack posts it."""
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0NEBULA"},
        "team": {"id": "T0NEBULA", "domain": "nebula"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
        "channel": {"id": channel, "name": "deploys"},
        "message": {"ts": message_ts, "type": "message"},
        "response_url": response_url,
        "trigger_id": "1.2.3",
        "actions": [
            {
                "type": "button",
                "action_id": action,
                "block_id": f"nebula_approval_{value}",
                "value": value,
                "action_ts": message_ts,
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()
