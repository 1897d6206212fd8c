"""The one module that speaks HTTP to Nebula's API (httpx), for every command in both modes:
remotely to a server, locally to the API's acts in this process (an httpx transport,
``cli.local``). The commands ask ``Api`` for documents and get our own errors back, the same
whichever way the request went: a refusal is the server's message, a server that cannot be
reached is one line naming it, a server without a route says which route.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

# Two optional imports of httpx's cost a remote command half its start, for nothing it uses:
# httpx imports its own command line (click, rich's progress bars, pygments) whenever those
# are installed, and httpcore imports trio (to support it as an async backend) whenever trio
# is. Nebula runs neither, and its client is synchronous, so both modules are marked absent
# before httpx is first imported (each library then does without, as when not installed);
# only while nothing has imported them for real.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
sys.modules.setdefault("trio", None)  # type: ignore[arg-type]

import httpx  # noqa: E402

from reconciler import wire  # noqa: E402
from reconciler.client import paths  # noqa: E402
from reconciler.errors import (  # noqa: E402
    NebulaError,
    RefusedError,
    UnansweredError,
    UnauthorizedError,
    UnreachableError,
)

_TOKEN_TEXT = re.compile(r"[A-Za-z0-9_.~+/=-]{1,500}")
TIMEOUT = httpx.Timeout(300.0, connect=10.0)  # a reconcile pass or a teardown may take a while
Document = dict[str, Any]


class Api:
    """``where``: the server's URL, as errors name it (None: this process's own store)."""

    def __init__(
        self, client: httpx.Client, where: str | None = None, *, token: bool = False
    ) -> None:
        self.client = client
        self.where = where
        self.has_token = token
        # How many seconds an answer may still take (``nebula wait --timeout``): no request
        # then outlasts what is left of the command's time.
        self.time_left: Callable[[], float] | None = None

    @property
    def remote(self) -> bool:
        return self.where is not None

    def close(self) -> None:
        self.client.close()

    def get(self, path: str, **params: object) -> Document:
        return self.send("GET", path, params=params)

    def post(self, path: str, body: Document | None = None) -> Document:
        return self.send("POST", path, body=body)

    def put(self, path: str, body: Document) -> Document:
        return self.send("PUT", path, body=body)

    def patch(self, path: str, body: Document) -> Document:
        return self.send("PATCH", path, body=body)

    def delete(self, path: str, **params: object) -> Document:
        return self.send("DELETE", path, params=params)

    def send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, object] | None = None,
        body: Document | None = None,
    ) -> Document:
        paths.check(path)
        query = {
            k: _param(v) for k, v in (params or {}).items() if v is not None and v is not False
        }
        try:
            response = self.client.request(
                method, path, params=query, json=body, timeout=self._timeout()
            )
        except httpx.TimeoutException as exc:
            raise UnansweredError(f"the Nebula server at {self.where} did not answer in time "
                                  f"({type(exc).__name__})") from None  # fmt: skip
        except httpx.TransportError as exc:
            raise UnreachableError(
                f"cannot reach the Nebula server at {self.where}: {_reason(exc)}",
                hint="check the URL and that nebula serve runs there (nebula context list)",
            ) from None
        if response.status_code >= 400:
            raise self.refusal(method, path, response)
        try:
            document: Document = response.json()
        except ValueError:  # a proxy's page, another service on that port
            raise RefusedError(
                f"the server at {self.where} answered {method} {path} with something that is "
                "not Nebula's JSON",
                hint="check the URL: it should be Nebula's own (nebula context list)",
            ) from None
        return document

    def _timeout(self) -> httpx.Timeout:
        if self.time_left is None:
            return TIMEOUT
        left = max(self.time_left(), 0.05)
        return httpx.Timeout(min(left, 300.0), connect=min(left, 10.0))

    def refusal(self, method: str, path: str, response: httpx.Response) -> NebulaError:
        status = response.status_code
        try:
            document: object = response.json()
        except ValueError:
            document = None
        error = wire.error_of(status, document)
        if _no_route(status, error, document):
            return RefusedError(
                f"the server at {self.where} has no route {method} {path}: it runs another "
                "version of Nebula",
                hint="use a command line of the server's version (nebula --version)",
            )
        if status == 401 and self.remote:
            said = "the server refused the token" if self.has_token else "the server wants a token"
            again = error.message.startswith("session expired")  # single sign-on's
            return UnauthorizedError(
                f"{said} (401): {error.message}",
                hint=f"sign in again: nebula login {self.where} --sso"
                if again
                else f"sign in: nebula login {self.where} (or set NEBULA_TOKEN)",
            )
        if isinstance(document, dict) or status < 500:
            return error
        return type(error)(f"the server at {self.where} answered {status} {response.reason_phrase}")


def _param(value: object) -> str:
    return "true" if value is True else str(value)


def _no_route(status: int, error: NebulaError, document: object) -> bool:
    if status == 405:
        return True
    if status != 404:
        return False
    if not isinstance(document, dict):
        return True  # not our API at all (a proxy's page)
    # A server of 1.1 answered an unknown route with code not-found and "Nothing at /path".
    return error.code == wire.NO_ROUTE or error.message.startswith("Nothing at ")


def _reason(exc: httpx.TransportError) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    return text.splitlines()[0][:200]


# For the local backend's transport (``cli.local``), which must not import httpx before this
# module has kept httpx's command line out.
Transport = httpx.BaseTransport
Request = httpx.Request
Response = httpx.Response


def in_process(transport: httpx.BaseTransport) -> Api:
    """The API answered in this process by ``transport`` (local mode)."""
    return Api(httpx.Client(base_url="http://nebula.local", transport=transport, timeout=TIMEOUT))


def connect(server: str, token: str | None) -> Api:
    if token is not None and not _TOKEN_TEXT.fullmatch(token):
        raise UnauthorizedError(
            "the token given is not one (a token is one word of letters, digits, '_' and '-')",
            hint="copy it again from nebula token create (NEBULA_TOKEN, or nebula login)",
        )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers["User-Agent"] = "nebula-cli"
    # Plain http needs no TLS context (building one reads the CA bundle: a tenth of a start);
    # anything else is checked, whatever its spelling (``HTTPS://`` is https too).
    verify: bool = urlsplit(server).scheme.lower() != "http"
    client = httpx.Client(base_url=server, headers=headers, timeout=TIMEOUT, verify=verify)
    return Api(client, server, token=token is not None)
