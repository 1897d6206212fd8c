"""``nebula login URL --sso``: signing in with the organization's OpenID Connect provider.

The command line never holds the client secret, nor talks to the provider's token endpoint:
the server does every exchange. With the device authorization grant (RFC 8628, when the
provider offers it) this prints where to go and the code to enter, then polls the server
until the person approved it in any browser; without it, it listens on a loopback port
(``http://127.0.0.1:<free port>/callback``), sends the person's browser to the provider, and
hands the code that comes back to the server. Either way the server answers a session token.
"""

from __future__ import annotations

import http.server
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from reconciler.cli import output
from reconciler.errors import ConfigurationError, ConflictError, ForbiddenError

if TYPE_CHECKING:
    from reconciler.client.http import Api

Document = dict[str, Any]
PAGE = (b"<!doctype html><html><head><meta charset=utf-8><title>Nebula</title></head><body>"
        b"<p>Nebula received the sign-in: go back to your terminal.</p></body></html>")  # fmt: skip


@dataclass
class Waits:
    """How the command waits (tests pass their own)."""

    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    open_browser: bool = field(default_factory=lambda: sys.stdout.isatty())


def sign_in(api: Api, server: str, waits: Waits | None = None) -> Document:
    """The server's answer once signed in: ``{"token", "member", "role", "expires_at", ...}``."""
    waits = waits or Waits()
    offered = api.get("/api/v1/sso")
    if not offered.get("enabled"):
        raise ConfigurationError(
            f"{server} does not offer single sign-on",
            hint=f"sign in with a token: nebula login {server} (its operator sets "
            "NEBULA_OIDC_ISSUER to offer single sign-on)",
        )
    if offered.get("device"):
        return _device(api, server, waits)
    return _loopback(api, waits)


def _device(api: Api, server: str, waits: Waits) -> Document:
    started = api.post("/api/v1/sso/device")
    output.echo(
        f"To sign in, open {started['verification_uri']} and enter the code {started['user_code']}"
    )
    if started.get("verification_uri_complete"):
        output.echo(f"(or open {started['verification_uri_complete']})")
    output.echo("Waiting for the sign-in to be approved...")
    deadline = waits.monotonic() + float(started["expires_in"])
    interval = float(started["interval"])
    while waits.monotonic() < deadline:
        waits.sleep(interval)
        answer = api.post("/api/v1/sso/token", {"handle": started["handle"]})
        if answer["status"] == "signed-in":
            return answer
        interval = float(answer.get("interval") or interval)
    raise ConflictError(
        "the code expired before the sign-in was approved", hint=f"nebula login {server} --sso"
    )


@dataclass
class _Answer:
    query: dict[str, str] = field(default_factory=dict)
    arrived: threading.Event = field(default_factory=threading.Event)


def _listener(answer: _Answer) -> http.server.HTTPServer:
    class Callback(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != "/callback":
                self.send_error(404)
                return
            answer.query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)
            answer.arrived.set()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the code is in the request line: never printed

    return http.server.HTTPServer(("127.0.0.1", 0), Callback)


def _loopback(api: Api, waits: Waits) -> Document:
    answer = _Answer()
    listener = _listener(answer)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        redirect_uri = f"http://127.0.0.1:{listener.server_address[1]}/callback"
        started = api.post("/api/v1/sso/authorize", {"redirect_uri": redirect_uri})
        output.echo(f"To sign in, open this page in a browser on this machine:\n  "
                    f"{started['authorization_url']}")  # fmt: skip
        if waits.open_browser:
            webbrowser.open(started["authorization_url"])
        output.echo("Waiting for the sign-in...")
        if not answer.arrived.wait(float(started["expires_in"])):
            raise ConflictError("no answer came from the sign-in page in time",
                                hint="nebula login URL --sso again")  # fmt: skip
    finally:
        listener.shutdown()
        listener.server_close()
    query = answer.query
    if "code" not in query or "state" not in query:
        said = query.get("error", "no code")[:100]
        raise ForbiddenError(f"the sign-in provider did not sign you in ({said})")
    body = {"handle": started["handle"], "code": query["code"], "state": query["state"]}
    return api.post("/api/v1/sso/token", body)
