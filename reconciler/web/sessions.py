"""The status page's single sign-on session: a cookie holding a Nebula session token.

``nebula_session`` is ``HttpOnly`` (no script reads it), ``SameSite=Lax`` (another site's
form cannot send it) and ``Secure`` unless the public URL is plain http on this machine
(behaviour.md "Single sign-on"). ``nebula_signin`` holds the handle of a sign-in under way for
the ten minutes it may take, so the provider's answer is taken only in the browser that began
it. With ``NEBULA_PAGE_AUTH=sso`` every page needs a session: without one (or with an expired
or revoked one) a page sends the browser to ``/login``, and back where it was afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import Depends, Request
from fastapi.responses import RedirectResponse, Response

from reconciler.acts.calls import PAGE_AUTH_SSO
from reconciler.admin import principals, tokens
from reconciler.core.states import Role
from reconciler.errors import UnauthorizedError
from reconciler.web.appstate import AppState, get_state

SESSION_COOKIE = "nebula_session"
SIGNIN_COOKIE = "nebula_signin"
SIGNIN_LIFETIME = timedelta(minutes=10)
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}

# The pages load only their own script and style: no inline code, nothing from elsewhere, and
# no form but, for someone signed in, the one that signs out (to this server).
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
SIGNED_IN_POLICY = PAGE_POLICY.replace("form-action 'none'", "form-action 'self'")


@dataclass(frozen=True)
class Viewer:
    """Who is signed in to the page, as its header says."""

    name: str
    role: Role
    expires_at: datetime | None


class SignInNeeded(Exception):
    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


def of_request(request: Request) -> str | None:
    return request.cookies.get(SESSION_COOKIE) or None


def secure(public_url: str) -> bool:
    parts = urlsplit(public_url)
    return not (parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK)


def local_path(next_path: str | None) -> str:
    """``next`` when it is a path of this server, else ``/`` (no open redirect: not
    ``//evil.example``, not ``/\\evil.example``, not a URL with a scheme)."""
    if (
        not next_path
        or not next_path.startswith("/")
        or next_path.startswith(("//", "/\\"))
        or any(ord(c) < 0x21 or c == "\\" for c in next_path)
        or len(next_path) > 2000
    ):
        return "/"
    return next_path


def viewer(request: Request, state: Annotated[AppState, Depends(get_state)]) -> Viewer | None:
    """The person signed in to the page, if anyone; a page that needs one and has none sends
    the browser to sign in (``SignInNeeded``)."""
    ctx = state.ctx
    token = of_request(request)
    if token:
        try:
            with ctx.db.reading() as session:
                row = tokens.verify(session, ctx.clock, token)
                who = principals.of_token(session, row)
                return Viewer(who.name, who.role, row.expires_at)
        except UnauthorizedError:
            pass  # expired, revoked or made up: as if there were none
    if ctx.settings.page_auth == PAGE_AUTH_SSO:
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInNeeded(path)
    return None


def to_login(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SignInNeeded)
    return RedirectResponse(f"/login?next={quote(local_path(exc.next_path), safe='/')}", 303)


def set_cookie(
    response: Response, name: str, value: str, lifetime: timedelta, public_url: str
) -> None:
    response.set_cookie(
        name,
        value,
        max_age=int(lifetime.total_seconds()),
        path="/",
        secure=secure(public_url),
        httponly=True,
        samesite="lax",
    )


def clear_cookie(response: Response, name: str, public_url: str) -> None:
    response.delete_cookie(name, path="/", secure=secure(public_url), httponly=True, samesite="lax")
