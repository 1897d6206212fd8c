"""A local HTTP receiver for webhook, PagerDuty and Teams deliveries: it records every
request (path, query, headers, body) and answers 202, or, on demand, 500, 429 with a
``Retry-After``, a slow answer, or a connection closed without an answer.

Fixtures: ``receiver`` (one per test); ``refused_url`` (a loopback port nothing listens on).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.infra.quiet import QuietHandler


@dataclass
class Received:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes
    checked: Any = None  # what ``Receiver.check`` made of it when it arrived

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Answer:
    status: int = 202
    retry_after: str | None = None
    drop: bool = False  # read the request, then close the connection without answering
    delay: float = 0.0


@dataclass
class _State:
    received: list[Received] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    down: Answer | None = None
    check: Callable[[Received], Any] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Httpd(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class _Handler(QuietHandler):
    protocol_version = "HTTP/1.1"
    server: _Httpd

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        url = urlsplit(self.path)
        state = self.server.state
        received = Received(
            url.path, parse_qs(url.query), {k.lower(): v for k, v in self.headers.items()}, body
        )
        if state.check is not None:
            try:
                received.checked = state.check(received)
            except Exception as exc:  # what the receiver's check refused, kept for the test
                received.checked = exc
        with state.lock:
            state.received.append(received)
            answer = state.down or (state.answers.pop(0) if state.answers else Answer())
        time.sleep(answer.delay)
        if answer.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        headers = [("Content-Type", "application/json")]
        if answer.retry_after is not None:
            headers.append(("Retry-After", answer.retry_after))
        reply = b'{"status":"success","message":"Event processed"}'
        self.answer(answer.status, reply, headers)


class Receiver:
    def __init__(self) -> None:
        self._server = _Httpd(("127.0.0.1", 0), _Handler)
        self._server.state = _State()
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str = "/hook") -> str:
        return self.base_url + path

    @property
    def received(self) -> list[Received]:
        with self._server.state.lock:
            return list(self._server.state.received)

    def answer(self, *answers: Answer) -> None:
        """The next requests get these answers, in order (then 202 again)."""
        with self._server.state.lock:
            self._server.state.answers.extend(answers)

    def check(self, check: Callable[[Received], Any]) -> None:
        """Run ``check`` on each request as it arrives (a signature check, at that moment)."""
        self._server.state.check = check

    def outage(self, answer: Answer | None = None) -> None:
        self._server.state.down = answer or Answer(status=503)

    def restore(self) -> None:
        self._server.state.down = None

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.stop()


@pytest.fixture
def refused_url() -> str:
    """A loopback address where a connection is refused: a port bound, then let go."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"
