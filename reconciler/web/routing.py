"""The HTTP routes of ``/api/v1``, built from ``acts.routes``: one FastAPI route per entry,
with its parameters, body and answer documented in ``/openapi.json``, validated by FastAPI,
then run as a ``Call`` like the command line's local backend runs it.

Each endpoint's signature is made from the table (``inspect.Signature``), since FastAPI reads
a route's parameters from its endpoint's signature: a path parameter, a query parameter with
its pattern, the body's model, the bearer token.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from reconciler.acts import calls, checking
from reconciler.acts.calls import Call, Caller
from reconciler.acts.declaring import Access, Param, Route
from reconciler.acts.routes import ROUTES
from reconciler.web import admindocs, bodies, models, notifydocs, sessions
from reconciler.web.appstate import AppState, get_state
from reconciler.web.error_responses import documented

bearer = HTTPBearer(
    auto_error=False,
    description="An API token (`nebula token create`); the member it belongs to acts, with "
    "the role and grants they have at the moment of the request.",
)
State = Annotated[AppState, Depends(get_state)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
TAGS = {
    Access.OPEN: "sign in",
    Access.PAGE: "read",
    Access.TOKEN: "people and settings",
    Access.ACT: "act",
}
ANYONE = (Access.OPEN, Access.PAGE)  # routes that take a token without asking for one


def _model(name: str) -> type[BaseModel]:
    for module in (models, admindocs, notifydocs, bodies):
        found = getattr(module, name, None)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    raise LookupError(f"no model named {name}")


def _parameter(param: Param) -> inspect.Parameter:
    keyword = inspect.Parameter.KEYWORD_ONLY
    if param.in_path:
        where: Any = Path(pattern=param.pattern, max_length=param.max_length)
        return inspect.Parameter(param.name, keyword, annotation=Annotated[str, where])
    if param.integer is not None:
        least, most, default = param.integer
        number: Any = Query(ge=least, le=most, description=param.about)
        return inspect.Parameter(
            param.name, keyword, annotation=Annotated[int, number], default=default
        )
    query: Any = Query(pattern=param.pattern, max_length=param.max_length, description=param.about)
    if param.required:
        return inspect.Parameter(param.name, keyword, annotation=Annotated[str, query])
    return inspect.Parameter(
        param.name, keyword, annotation=Annotated[str | None, query], default=None
    )


def _endpoint(route: Route) -> Callable[..., Any]:
    path_names = {p.name for p in route.params if p.in_path}
    body_model = _model(route.body) if route.body is not None else None

    # The app, the request and the token are named so that no parameter of the table can
    # take their names.
    async def endpoint(
        app_state_: AppState, request_: Request, bearer_: Any = None, **values: Any
    ) -> Any:
        state = app_state_
        checking.check_known(route, request_.query_params)  # after FastAPI's own checks
        token = _token(request_) if route.access in ANYONE else _bearer(bearer_)
        if token is None and route.access is Access.PAGE:
            token = sessions.of_request(request_)  # the page's session cookie
        body = values.pop("body", None)
        dumped = body.model_dump(by_alias=True) if isinstance(body, BaseModel) else {}
        call = Call(
            state.ctx,
            Caller(token=token),
            path={k: str(v) for k, v in values.items() if k in path_names},
            query={
                k: None if v is None else str(v) for k, v in values.items() if k not in path_names
            },
            body=dumped,
            wake=state.wake,
        )
        # Answered as the act built it (the model documents it): the same document, in the
        # same order, as the command line's local backend gives.
        return JSONResponse(await run_in_threadpool(calls.run, route, call))

    keyword = inspect.Parameter.KEYWORD_ONLY
    # A read as public as the page takes a token without asking for one: /openapi.json
    # declares the bearer scheme only on routes that need it.
    bearer = (
        []
        if route.access in ANYONE
        else [inspect.Parameter("bearer_", keyword, annotation=Credentials)]
    )
    parameters = [
        inspect.Parameter("app_state_", keyword, annotation=State),
        inspect.Parameter("request_", keyword, annotation=Request),
        *bearer,
        *(_parameter(p) for p in route.params),
    ]
    if body_model is not None:
        optional = all(not field.is_required() for field in body_model.model_fields.values())
        annotation: Any = (
            Annotated[body_model | None, Body()] if optional else Annotated[body_model, Body()]
        )
        default = None if optional else inspect.Parameter.empty
        parameters.append(
            inspect.Parameter("body", keyword, annotation=annotation, default=default)
        )
    endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    endpoint.__name__ = route.name
    return endpoint


def _bearer(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return credentials.credentials if credentials is not None else None


def _token(request: Request) -> str | None:
    """The bearer token a request to a public read came with, if any (a wrong one is still
    refused: 401 says so rather than answering as if there were none)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if not scheme:
        return None
    return token.strip() if scheme.lower() == "bearer" else ""


def router() -> APIRouter:
    built = APIRouter()
    seen: set[str] = set()
    for route in ROUTES:
        operation = route.name if route.name not in seen else f"{route.name}_{len(seen)}"
        seen.add(operation)
        built.add_api_route(
            route.path,
            _endpoint(route),
            methods=[route.method],
            response_model=_model(route.response),
            responses=documented(*route.statuses),
            summary=route.summary,
            tags=[TAGS[route.access]],
            operation_id=operation,
        )
    return built
