"""Who is acting, loaded from the store at the moment of the request: a member by name (local
``--as``, a Slack user), the member behind an API token, or the store's operator.

Loading at each request is what makes a demoted or removed member's tokens lose their rights
at once: nothing about rights is kept in a token or a session.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.admin import grants, members, tokens
from reconciler.clock import Clock
from reconciler.core import rights
from reconciler.core.rights import Principal, Where
from reconciler.core.states import GrantKind, Role
from reconciler.store import schema


def of_member(
    session: Session,
    member: schema.Member,
    *,
    token: int | None = None,
    local: bool = False,
    admin_for_session: bool = False,
) -> Principal:
    """``admin_for_session``: a single sign-on session whose groups made the person an admin
    (``NEBULA_OIDC_ADMIN_GROUPS``); an owner stays an owner."""
    role = Role(member.role)
    if admin_for_session and not role.can_decide:
        role = Role.ADMIN
    return Principal(member.name, role, grants.of(session, member.id), token=token, local=local)


def by_name(session: Session, name: str, *, local: bool = False) -> Principal:
    """The member ``name`` (``NotFoundError`` when there is none)."""
    return of_member(session, members.get(session, name), local=local)


def by_token(session: Session, clock: Clock, token: str | None) -> Principal:
    """The member a bearer token belongs to (``UnauthorizedError`` for a missing, bad or
    expired one). Reads nothing but rows; ``tokens.record_use`` records the use."""
    return of_token(session, tokens.verify(session, clock, token))


def of_token(session: Session, row: schema.ApiToken) -> Principal:
    """The member behind a verified token, with what its session adds."""
    return of_member(
        session, row.member, token=row.id, admin_for_session=bool(row.admin_for_session)
    )


def where(environment: schema.Environment) -> Where:
    return Where(environment.project.slug, environment.name, environment.protected)


def deciders(session: Session, environment: schema.Environment) -> tuple[str, ...]:
    """Everyone who holds the approve grant in ``environment``: its admins and owners, and
    the members granted it there."""
    place = where(environment)
    found = []
    for member in session.scalars(select(schema.Member).order_by(schema.Member.name)):
        if rights.holds(of_member(session, member), GrantKind.APPROVE, place):
            found.append(member.name)
    return tuple(found)
