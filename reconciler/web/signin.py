"""``GET /login``, ``GET /auth/callback`` and ``POST /logout``: the status page's single
sign-on (authorization code with PKCE, ``state`` and ``nonce``; ``acts.signing`` does the work).

A refusal is a page with one plain sentence (the error pages' handler), the reason in the log;
the provider down is a 503 naming it, and nothing else of Nebula waits on it.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from reconciler.acts import signing
from reconciler.admin import tokens
from reconciler.core.states import SignInKind
from reconciler.errors import ForbiddenError, NotFoundError, UnauthorizedError
from reconciler.web import conventions, sessions, templating
from reconciler.web.appstate import AppState, get_state

router = APIRouter(include_in_schema=False)
State = Annotated[AppState, Depends(get_state)]
log = logging.getLogger("nebula.sso")
_TEXT = Query(max_length=2000)


def _public(state: AppState) -> str:
    return state.ctx.settings.public_url.rstrip("/")


def _set_up(state: AppState) -> None:
    if not signing.enabled(state.ctx):
        raise NotFoundError(signing.NOT_SET_UP, hint=signing.NOT_SET_UP_HINT)


@router.get("/login")
async def login(state: State, next: Annotated[str | None, _TEXT] = None) -> Response:
    _set_up(state)
    back = sessions.local_path(next)
    redirect_uri = f"{_public(state)}/auth/callback"
    handle, url = await run_in_threadpool(
        signing.start_redirect, state.ctx, SignInKind.PAGE, redirect_uri, back
    )
    response = RedirectResponse(url, 303, headers={conventions.LEAVES: "1"})
    sessions.set_cookie(
        response, sessions.SIGNIN_COOKIE, handle, sessions.SIGNIN_LIFETIME, _public(state)
    )
    return response


@router.get("/auth/callback")
async def callback(
    request: Request,
    state: State,
    code: Annotated[str | None, _TEXT] = None,
    state_: Annotated[str | None, Query(alias="state", max_length=2000)] = None,
    iss: Annotated[str | None, _TEXT] = None,
    error: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    _set_up(state)
    if error is not None or not code or not state_:
        said = (error or "no code").replace("\n", " ")[:100]
        log.warning("sign-in refused", extra={"reason": f"the provider answered: {said}"})
        raise ForbiddenError(
            f"Sign-in refused: the sign-in provider did not sign you in ({said})",
            hint="start again: /login",
        )
    handle = request.cookies.get(sessions.SIGNIN_COOKIE)
    signed = await run_in_threadpool(
        signing.finish_redirect, state.ctx, SignInKind.PAGE, handle, code, state_, iss
    )
    response = RedirectResponse(sessions.local_path(signed.next_path), 303)
    public = _public(state)
    sessions.set_cookie(
        response, sessions.SESSION_COOKIE, signed.token, state.ctx.settings.session_ttl, public
    )
    sessions.clear_cookie(response, sessions.SIGNIN_COOKIE, public)
    return response


@router.post("/logout")
async def logout(request: Request, state: State) -> Response:
    token = sessions.of_request(request)
    if token:
        await run_in_threadpool(_end, state, token)
    response = RedirectResponse("/signed-out", 303)
    sessions.clear_cookie(response, sessions.SESSION_COOKIE, _public(state))
    return response


def _end(state: AppState, token: str) -> None:
    """The session's token revoked: the cookie, copied elsewhere, is worth nothing now."""
    ctx = state.ctx
    try:
        with ctx.db.transaction() as session:
            row = tokens.verify(session, ctx.clock, token)
            if row.via == tokens.VIA_SSO:
                tokens.revoke(session, row)
    except UnauthorizedError:
        pass  # already over


@router.get("/signed-out")
def signed_out() -> HTMLResponse:
    return HTMLResponse(templating.render("signedout.html", title="Signed out"))
