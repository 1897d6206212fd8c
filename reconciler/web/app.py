"""The FastAPI app of ``nebula serve``: pages, API, hooks and operations on one ``Context``.

The scheduler is optional: ``nebula serve`` passes one and the app starts and stops it with
its lifespan; tests build the app without one and drive polls and ticks themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.staticfiles import StaticFiles

import reconciler
from reconciler.context import Context
from reconciler.scheduling import Scheduler
from reconciler.web import (
    admission,
    conventions,
    error_responses,
    hooks,
    operations,
    pages,
    routing,
    sessions,
    signin,
    slack,
)
from reconciler.web.appstate import AppState
from reconciler.web.metrics import Metrics

STATIC = Path(__file__).parent / "static"

SECURITY_HEADERS = {
    "Content-Security-Policy": sessions.PAGE_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

DESCRIPTION = """\
Nebula's JSON API: the same documents `nebula ... -o json` prints, and a route for every
command (`nebula login URL` makes the command line use them).

What the status page shows (projects, status, deployments, change sets, approvals, history,
diff) is as public as the page. The audit, members, grants, tokens, policies and freezes, and
every act, need `Authorization: Bearer <token>` (`nebula token create`): the token's member
acts, with the role and grants they have at the moment of the request.
Errors are `{"error": "...", "hint": "...", "code": "..."}` with 401 (no valid token),
403 (the message names what is missing), 404, 409 (refused: a freeze, a policy, a state),
413 or 422.
"""


def create_app(
    ctx: Context, *, scheduler: Scheduler | None = None, metrics: Metrics | None = None
) -> FastAPI:
    state = AppState(ctx=ctx, metrics=metrics or Metrics(ctx), scheduler=scheduler)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if scheduler is not None:
            scheduler.start()
        try:
            yield
        finally:
            if scheduler is not None:
                await run_in_threadpool(scheduler.stop)

    app = FastAPI(
        title="Nebula",
        version=getattr(reconciler, "__version__", "0.1.0"),
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.nebula = state
    error_responses.install(app)
    app.add_exception_handler(sessions.SignInNeeded, sessions.to_login)
    app.include_router(routing.router())
    app.include_router(hooks.router)
    app.include_router(operations.router)
    app.include_router(pages.router)
    app.include_router(signin.router)
    app.include_router(slack.router(ctx))
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    # Middleware added later runs first: HTTP's conventions, the security headers, then what a
    # request must pass before the app reads it (its refusals carry the headers too).
    app.add_middleware(admission.Admission, state=state)

    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        if not request.url.path.startswith("/api/docs"):  # Swagger UI loads from a CDN
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
        return response

    app.add_middleware(conventions.Conventions)
    return app
