"""HTTP conventions the framework leaves to the app, kept for every route at once.

- ``HEAD`` answers as ``GET`` would, headers and all, without the body (FastAPI routes
  declared with GET refuse it with 405, and monitors and ``curl -I`` use it).
- A redirect stays on this server: its ``Location`` is a path, never a URL built from the
  ``Host`` header the client sent (Starlette's trailing-slash redirect does that, so a forged
  ``Host: evil.example`` made ``Location: http://evil.example/...``). The one exception is a
  route that sends the person elsewhere on purpose (``/login``, to the sign-in provider): it
  says so with the header ``LEAVES``, which is taken off the answer.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LEAVES = "x-nebula-leaves"  # on a redirect built from settings, never from the request


class Conventions:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and 300 <= message["status"] < 400:
                headers = message["headers"]
                leaves = any(k.lower() == LEAVES.encode() for k, _ in headers)
                kept = [(k, v) for k, v in headers if k.lower() != LEAVES.encode()]
                message = {
                    **message,
                    "headers": kept if leaves else [_local(k, v) for k, v in kept],
                }
            elif head and message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app(scope, receive, sending)


def _local(name: bytes, value: bytes) -> tuple[bytes, bytes]:
    """A ``Location`` header as a path on this server (scheme and host dropped)."""
    if name.lower() != b"location":
        return name, value
    parts = urlsplit(value.decode("latin-1"))
    path = urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment))
    if path.startswith("//"):  # "//evil.example/x" is a URL without a scheme, not a path
        path = "/" + path.lstrip("/")
    return name, path.encode("latin-1")
