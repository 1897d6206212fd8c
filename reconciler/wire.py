"""How an error crosses HTTP, both ways: the status and JSON body the server answers with
(interfaces.md "HTTP additions": ``{"error": "...", "hint": "..."}``, plus a ``code``), and
the error a client raises for them. Shared by the web app, the command line's in-process
backend and its HTTP client, so a refusal reads the same in every mode.

    UnauthorizedError -> 401     ForbiddenError -> 403     NotFoundError -> 404
    other RefusedError -> 409    ConfigurationError -> 422
    TransientError, StoreError -> 503        anything unexpected -> 500
"""

from __future__ import annotations

from typing import Any

from reconciler.errors import (
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    NebulaError,
    NotFoundError,
    RefusedError,
    StoreError,
    TransientError,
    UnauthorizedError,
)

# (class, status), most specific first.
STATUSES: tuple[tuple[type[NebulaError], int], ...] = (
    (UnauthorizedError, 401),
    (ForbiddenError, 403),
    (NotFoundError, 404),
    (RefusedError, 409),
    (ConfigurationError, 422),
    (TransientError, 503),
    (StoreError, 503),
)

NO_ROUTE = "no-route"  # the code of a 404 for a path the server does not serve at all


def status_of(error: NebulaError) -> int:
    for cls, status in STATUSES:
        if isinstance(error, cls):
            return status
    return 500


def body(code: str, message: str, hint: str | None = None) -> dict[str, Any]:
    return {"error": message, "hint": hint, "code": code}


def body_of(error: NebulaError) -> dict[str, Any]:
    return body(str(error.code), error.message, error.hint)


# What a client raises for a status (a 409's code is kept: frozen, suspended, conflict, ...).
_ERRORS: dict[int, type[NebulaError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: ConfigurationError,
    422: ConfigurationError,
    503: StoreError,
}


def error_of(status: int, document: object) -> NebulaError:
    """The error an answer of ``status`` with the JSON ``document`` stands for."""
    message, hint, code = f"the server answered {status}", None, None
    if isinstance(document, dict):
        found = document.get("error")
        if isinstance(found, dict):  # a server of 1.1 nested it: {"error": {"code", "message"}}
            code, hint, found = found.get("code"), found.get("hint"), found.get("message")
        else:
            code, hint = document.get("code"), document.get("hint")
        if isinstance(found, str) and found:
            message = found
    cls = _ERRORS.get(status, RefusedError if 400 <= status < 500 else TransientError)
    error = cls(message, hint=hint if isinstance(hint, str) else None)
    if isinstance(code, str) and code:
        error.code = code
    return error
