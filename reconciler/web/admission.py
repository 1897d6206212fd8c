"""What a request must pass before the app sees it: a body within its route's limit, and, for
the API's writes, a valid bearer token before a byte of the body is read.

An ASGI middleware (under FastAPI, which reads and parses a route's body before it runs the
route's dependencies, so a token checked there comes too late):

- The token first: a write under ``/api/`` (any method but GET, HEAD and OPTIONS) without a
  valid token is answered 401 at once; its body is never read. Signing in (``/api/v1/sso/``)
  is the exception: it is how one gets a token.
- Then the size: a ``Content-Length`` over the route's limit (``LIMITS``) is answered 413 at
  once; a body sent without one (chunked) is counted as it arrives and answered 413 the
  moment it passes the limit, the rest unread (uvicorn closes the connection). A body within
  the limit is handed to the app as it was sent, so nothing ever holds more than the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler import numbers
from reconciler.admin import tokens
from reconciler.errors import NebulaError, UnauthorizedError
from reconciler.numbers import KIB, MIB, format_size
from reconciler.web import error_responses
from reconciler.web.appstate import AppState

READS = frozenset({"GET", "HEAD", "OPTIONS"})
OPEN = "/api/v1/sso/"  # signing in takes no token: it is how one gets one


@dataclass(frozen=True)
class Limit:
    prefix: str  # of the path
    size: int  # bytes
    what: str


# The first whose prefix the path starts with; anything else takes DEFAULT.
LIMITS = (
    Limit("/hooks/git/", 25 * MIB, "a push notification"),  # GitHub caps payloads at 25 MB
    Limit("/slack/interactions", 1 * MIB, "a Slack interaction"),  # a few kilobytes
    Limit("/api/", 64 * KIB, "an API request"),  # a reason, an environment, a release name
)
DEFAULT = Limit("/", 64 * KIB, "a request")  # pages take no body at all


def limit_for(path: str) -> Limit:
    return next((limit for limit in LIMITS if path.startswith(limit.prefix)), DEFAULT)


@dataclass(frozen=True)
class Refusal:
    """An answer given instead of the app's."""

    status: int
    code: str
    message: str
    hint: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, error: NebulaError) -> Refusal:
        status = error_responses.status_of(error)
        bearer = (("WWW-Authenticate", "Bearer"),) if isinstance(error, UnauthorizedError) else ()
        return cls(status, error.code, error.message, error.hint, bearer)


class Admission:
    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if scope["method"] not in READS and path.startswith("/api/") and not path.startswith(OPEN):
            refused = await run_in_threadpool(self._token_refusal, scope)
            if refused is not None:
                await _answer(scope, receive, send, refused)
                return
        limit = limit_for(scope["path"])
        declared = _header(scope, b"content-length")
        if declared is not None:
            size = numbers.whole(declared)
            if size is None:
                message = f"Content-Length {declared[:40]!r} is not a number of bytes"
                await _answer(scope, receive, send, Refusal(400, "invalid-request", message))
                return
            if size > limit.size:
                await _answer(scope, receive, send, _too_large(limit))
                return
        body = await _read(receive, limit)
        if body is None:  # the client went away while sending
            return
        if isinstance(body, Refusal):
            await _answer(scope, receive, send, body)
            return
        await self.app(scope, _replay(body, receive), send)

    def _token_refusal(self, scope: Scope) -> Refusal | None:
        """Why this write may not go on (no token, a bad one, a store that cannot say), or
        None. The route authenticates again inside its own transaction and records the use."""
        scheme, _, token = (_header(scope, b"authorization") or "").partition(" ")
        try:
            with self.state.ctx.db.reading() as session:
                tokens.verify(
                    session, self.state.ctx.clock, token if scheme.lower() == "bearer" else None
                )
        except NebulaError as exc:
            return Refusal.of(exc)
        return None


async def _read(receive: Receive, limit: Limit) -> bytes | Refusal | None:
    """The whole body, or the refusal the moment it passes ``limit``; None on a disconnect."""
    chunks: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limit.size:
            return _too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then whatever the client sends next (its disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _too_large(limit: Limit) -> Refusal:
    return Refusal(
        413,
        "too-large",
        f"The request body is larger than {format_size(limit.size)}, the most {limit.what} "
        "may hold; it was not read",
    )


async def _answer(scope: Scope, receive: Receive, send: Send, refusal: Refusal) -> None:
    """The refusal, and the connection closed after it: the body (or its rest) is unread."""
    headers = dict(refusal.headers) | {"Connection": "close"}
    response = error_responses.respond(
        Request(scope), refusal.status, refusal.code, refusal.message, refusal.hint, headers
    )
    await response(scope, receive, send)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None
