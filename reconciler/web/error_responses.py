"""Our errors as HTTP responses: one JSON body shape for the API, an HTML page for people.

``{"error": "<message>", "hint": "<what to do>" | null, "code": "<machine-readable>"}``, with
the status the error's class calls for (``wire``); a request that does not validate is 422,
anything unexpected 500 (logged, details not sent).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from reconciler import wire
from reconciler.errors import NebulaError
from reconciler.web import models, templating

log = logging.getLogger("nebula.web")

_HTTP_CODES = {
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    413: "too-large",
    415: "unsupported-media-type",
}


status_of = wire.status_of


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: the error statuses it may answer, with the body's schema."""
    descriptions = {
        401: "missing or invalid bearer token",
        403: "the member's role or grants do not allow it (the message names what is missing)",
        404: "no such project, deployment, change set or approval",
        409: "refused: freeze, concurrency, policy, or a state that does not allow it",
        422: "the request does not validate",
        503: "the database or the cluster cannot be reached",
    }
    return {s: {"model": models.ErrorBody, "description": descriptions[s]} for s in statuses}


def _wants_json(request: Request) -> bool:
    path = request.url.path
    if path.startswith(("/api/", "/hooks/", "/healthz", "/metrics", "/openapi")):
        return True
    accept = request.headers.get("accept", "")
    return "text/html" not in accept and "application/json" in accept


def respond(
    request: Request,
    status: int,
    code: str,
    message: str,
    hint: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    if _wants_json(request):
        return JSONResponse(wire.body(code, message, hint), status_code=status, headers=headers)
    page = templating.render(
        "error.html", title=f"{status}", status=status, message=message, hint=hint
    )
    return HTMLResponse(page, status_code=status, headers=headers)


def _nebula_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, NebulaError)
    status = status_of(exc)
    if status >= 500:
        log.warning(
            "request failed",
            extra={"path": request.url.path, "code": exc.code, "reason": exc.message},
        )
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return respond(request, status, exc.code, exc.message, exc.hint, headers)


def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    message = "; ".join(problems) or "the request does not validate"
    return respond(request, 422, "invalid-request", message)


def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400:  # a body that cannot be parsed: bad input, like any other
        return respond(request, 422, "invalid-request", f"body: {exc.detail}")
    code = _HTTP_CODES.get(exc.status_code, "error")
    message = str(exc.detail) if exc.detail else code
    headers = exc.headers
    if exc.status_code in (404, 405):  # no such route (for this method): not an unknown object
        code = wire.NO_ROUTE
    if exc.status_code == 405:  # each method of a path is a route of its own: name them all
        headers = {"Allow": ", ".join(_allowed(request))}
    if exc.status_code == 404:
        message = f"Nothing at {request.url.path}"
    return respond(request, exc.status_code, code, message, headers=headers)


def _allowed(request: Request) -> list[str]:
    methods: set[str] = set()
    for route in request.app.routes:
        matches = getattr(route, "path_regex", None)
        if matches is not None and matches.match(request.url.path):
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")  # served as GET without its body (web.conventions)
    return sorted(methods)


def _unexpected(request: Request, exc: Exception) -> Response:
    log.error("request crashed", extra={"path": request.url.path}, exc_info=exc)
    return respond(request, 500, "internal", "Internal error; the server log has the details")


def install(app: FastAPI) -> None:
    app.add_exception_handler(NebulaError, _nebula_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
