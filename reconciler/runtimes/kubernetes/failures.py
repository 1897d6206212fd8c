"""The API server's refusals and the network's failures, turned into Nebula's errors.

Callers above this edge see only ``reconciler.errors``; the split follows what waiting can fix
(``reconciler.runtimes.cluster`` explains what the engine does with each)::

    no connection (refused, reset, DNS, TLS), 401     UnreachableError   the `delivery` blocker
    5xx, 409 Conflict, 429, timeouts                  TransientError     retried by the engine
    403 "exceeded quota"                              PermanentError     code `capacity`
    422 / 400 (the object itself is wrong)            PermanentError     code `configuration`
    403 otherwise, other 4xx                          PermanentError     code: the caller's blocker

404 is not an error here: each call decides what a missing object means.

Messages name the request ("apply Deployment/api-r3 in shop-prod") and the server's own
words, cut short and with every credential this client holds removed. A Secret's refusal keeps
only the field paths the server names, never the values it quotes back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from reconciler.core.states import Blocker
from reconciler.errors import NebulaError, PermanentError, TransientError, UnreachableError

MAX_MESSAGE = 300
TRANSIENT_STATUSES = frozenset({409, 429})
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[^\s\"',]+")
_QUOTA = "exceeded quota"


class Redactor:
    """Removes this client's credentials (token, passwords) from any text it is shown."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = tuple(sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        text = _BEARER.sub(r"\1 ***", text)
        if len(text) > MAX_MESSAGE:
            text = text[: MAX_MESSAGE - 3].rstrip() + "..."
        return text


def server_message(body: bytes | str | None, *, fields_only: bool = False) -> tuple[str, str]:
    """(reason, message) of a ``Status`` body; with ``fields_only``, the fields it names."""
    if body is None:
        return "", ""
    try:
        status: Any = json.loads(body)
    except ValueError:
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        return "", "" if fields_only else " ".join(text.split())
    if not isinstance(status, dict):
        return "", ""
    reason = str(status.get("reason") or "")
    if fields_only:
        causes = (status.get("details") or {}).get("causes") or []
        names = sorted(
            {str(c.get("field")) for c in causes if isinstance(c, dict) and c.get("field")}
        )
        return reason, f"invalid fields: {', '.join(names)}" if names else ""
    return reason, " ".join(str(status.get("message") or "").split())


def from_status(
    status: int,
    body: bytes | str | None,
    *,
    what: str,
    blocker: Blocker | None,
    redact: Redactor,
    sensitive: bool = False,
) -> NebulaError:
    """Our error for an HTTP error answer to the request described by ``what``."""
    reason, detail = server_message(body, fields_only=sensitive)
    said = f"{status} {reason}".strip() + (f": {detail}" if detail else "")
    if status == 401:
        return UnreachableError(
            redact(
                f"Kubernetes API refused our credentials while trying to {what} ({said}); "
                "check the kubeconfig user or the service account token"
            ),
            status=status,
        )
    if status >= 500 or status in TRANSIENT_STATUSES:
        return TransientError(redact(f"Kubernetes API could not {what}: {said}"), status=status)
    if status == 403 and _QUOTA in detail:
        code = Blocker.CAPACITY.value
    elif status in (400, 422):
        code = Blocker.CONFIGURATION.value
    else:
        code = blocker.value if blocker is not None else PermanentError.code
    return PermanentError(
        redact(f"Kubernetes API refused to {what}: {said}"), code=code, status=status
    )


def from_exception(
    exc: Exception, *, what: str, blocker: Blocker | None, redact: Redactor
) -> NebulaError:
    """Our error for what the client library or urllib3 raised while trying to ``what``."""
    if isinstance(exc, NebulaError):
        return exc
    if isinstance(exc, ApiException):
        if exc.status:
            return from_status(exc.status, exc.body, what=what, blocker=blocker, redact=redact)
        # status 0: the client gave up before any answer (a TLS failure, most often)
        first = str(exc.reason or "no answer").splitlines()[0]
        return UnreachableError(redact(f"Kubernetes API could not be reached to {what}: {first}"))
    cause = exc.reason if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    if isinstance(cause, urllib3.exceptions.ReadTimeoutError | TimeoutError):
        return TransientError(redact(f"Kubernetes API did not answer in time to {what}"))
    if isinstance(
        cause,
        urllib3.exceptions.ConnectTimeoutError
        | urllib3.exceptions.NewConnectionError
        | urllib3.exceptions.ProtocolError
        | urllib3.exceptions.SSLError
        | urllib3.exceptions.ProxyError
        | urllib3.exceptions.HTTPError
        | ConnectionError
        | OSError,
    ):
        return UnreachableError(
            redact(f"Kubernetes API could not be reached to {what}: {_describe(cause)}")
        )
    return TransientError(redact(f"Kubernetes API request to {what} failed: {_describe(exc)}"))


def _describe(exc: BaseException | None) -> str:
    """A short cause without urllib3's connection-object reprs (``<HTTPSConnection at 0x..>``)."""
    if exc is None:
        return "no answer"
    if isinstance(
        exc, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ConnectTimeoutError
    ):
        text = str(exc).split(": ", 1)[-1]
    elif isinstance(exc, urllib3.exceptions.ProtocolError) and exc.args:
        text = str(exc.args[0])
        if len(exc.args) > 1:
            text += f" ({type(exc.args[1]).__name__})"
    else:
        text = str(exc) or type(exc).__name__
    return re.sub(r"<[^>]* at 0x[0-9a-f]+>", "connection", text)
