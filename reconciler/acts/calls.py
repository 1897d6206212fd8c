"""One call of the API, whichever door it came through: the HTTP app (``web.routing``) or the
command line's in-process backend (``cli.local``). Both build a ``Call`` and ``run`` it, so a
command behaves the same locally and remotely, with one path to test.

A route's ``access`` says who may call it at all: ``OPEN`` is anyone (signing in); ``PAGE``
reads are as public as the status page (with ``NEBULA_PAGE_AUTH=sso``: a session or a token);
``TOKEN`` reads (the audit, members, grants, tokens, policies) need a member of any
role; ``ACT`` needs a member too, and the act itself decides, through ``core.rights``, what
that member may do. Locally the caller is the store's operator: ``--as NAME`` names the
member who acts (and whose rights apply), and nobody named is ``local-admin``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from reconciler.acts.declaring import Access, Route
from reconciler.admin import auditing, principals, tokens
from reconciler.context import Context
from reconciler.core.rights import LOCAL_ADMIN, Principal
from reconciler.core.states import AdminAction
from reconciler.errors import ConfigurationError, StoreError, UnauthorizedError
from reconciler.lazy import Part
from reconciler.numbers import parse_id
from reconciler.store import schema

Document = dict[str, Any]
PAGE_AUTH_SSO = "sso"  # NEBULA_PAGE_AUTH: the page and its JSON need a session or a token
SIGN_IN_FIRST = "this server's pages need a session: sign in first"


@dataclass(frozen=True)
class Caller:
    """Who a request says it is: the bearer token it came with (HTTP), or, in local mode,
    the store's operator acting as ``as_name`` (None: ``local-admin``)."""

    token: str | None = None
    local: bool = False
    as_name: str | None = None


@dataclass
class Call:
    ctx: Context
    caller: Caller
    path: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str | None] = field(default_factory=dict)
    body: Mapping[str, Any] = field(default_factory=dict)
    wake: Callable[[], None] = lambda: None  # the scheduler's tick, after a change
    principal: Principal | None = None  # set by ``run`` before the act: None is anonymous

    @property
    def who(self) -> Principal:
        """The member acting (an ``ACT`` or ``TOKEN`` route always has one)."""
        if self.principal is None:
            raise UnauthorizedError("Missing bearer token")
        return self.principal

    def param(self, name: str) -> str:
        value = self.path.get(name) or self.query.get(name)
        if value is None:
            raise ConfigurationError(f"{name} is required")
        return value

    def option(self, name: str) -> str | None:
        return self.query.get(name) or None

    def id(self, name: str, what: str) -> int:
        return parse_id(self.param(name), what)

    def text(self, name: str) -> str:
        value = self.body.get(name)
        if not isinstance(value, str):
            raise ConfigurationError(f"body: {name} is required (text)")
        return value

    def maybe(self, name: str) -> str | None:
        value = self.body.get(name)
        if value is not None and not isinstance(value, str):
            raise ConfigurationError(f"body: {name} must be text")
        return value

    def audit(
        self,
        session: Session,
        action: AdminAction,
        target: str,
        text: str,
        project: schema.Project | None = None,
    ) -> None:
        """Record this call's administrative act under the member who made it."""
        auditing.record(
            session, self.ctx.clock, action, target, text, actor=self.who.name, project=project
        )

    def flag(self, name: str) -> bool:
        value = self.body.get(name, False)
        if not isinstance(value, bool):
            raise ConfigurationError(f"body: {name} must be true or false")
        return value


def resolve(call: Call, access: Access) -> Principal | None:
    """Who ``call`` acts as: loaded now, so a demoted member's token has lost the rights."""
    ctx = call.ctx
    if call.caller.local:
        if call.caller.as_name is None:
            return LOCAL_ADMIN
        with ctx.db.reading() as session:
            return principals.by_name(session, call.caller.as_name, local=True)
    if access is Access.OPEN:
        return None
    if call.caller.token is None and access is Access.PAGE:
        if ctx.settings.page_auth == PAGE_AUTH_SSO:
            raise UnauthorizedError(SIGN_IN_FIRST, hint=tokens.SIGN_IN_AGAIN)
        return None  # the page is public
    with ctx.db.reading() as session:
        row = tokens.verify(session, ctx.clock, call.caller.token)
        found = principals.of_token(session, row)
        stale = tokens.stale_use(row, ctx.clock.now())
    if stale:  # a read-only store still answers: the use is recorded next time
        with contextlib.suppress(StoreError), ctx.db.transaction() as session:
            tokens.record_use(session, ctx.clock, found.token or 0)
    return found


def run(route: Route, call: Call) -> Document:
    call.principal = resolve(call, route.access)
    act: Callable[[Call], Document] = Part.named(route.act).get()
    return act(call)
