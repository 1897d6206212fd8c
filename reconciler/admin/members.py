"""Organization members, their roles, and API tokens (stored hashed, compared in constant time)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core.states import Role
from reconciler.errors import ConfigurationError, NotFoundError, RefusedError, UnauthorizedError
from reconciler.store import schema

PROJECT_REQUESTER = "project:"  # requester/owner prefix when the project (a push) asks
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")


def project_actor(slug: str) -> str:
    return f"{PROJECT_REQUESTER}{slug}"


def shown_actor(name: str | None) -> str | None:
    """As users read it: the project's slug when a push asked (the project is the requester);
    stored with a prefix no member name can take, so it is never taken for a person."""
    if name is not None and name.startswith(PROJECT_REQUESTER):
        return name[len(PROJECT_REQUESTER) :]
    return name


def add(
    session: Session, clock: Clock, name: str, role: str, slack_id: str | None = None
) -> schema.Member:
    if not _NAME.match(name) or name.startswith(PROJECT_REQUESTER):
        raise ConfigurationError(
            f"'{name}' is not a valid member name", hint="use letters, digits, '.', '_', '@' or '-'"
        )
    try:
        parsed = Role(role)
    except ValueError:
        raise ConfigurationError(
            f"--role {role!r} is not a role", hint="use owner, admin or member"
        ) from None
    existing = find(session, name)
    if existing is not None:
        existing.role = parsed.value
        if slack_id is not None:
            existing.slack_id = slack_id
        return existing
    if slack_id is not None and by_slack_id(session, slack_id) is not None:
        raise RefusedError(f"Slack user {slack_id} is already mapped to another member")
    member = schema.Member(name=name, role=parsed.value, slack_id=slack_id, created_at=clock.now())
    session.add(member)
    session.flush()
    return member


def find(session: Session, name: str) -> schema.Member | None:
    return session.scalars(select(schema.Member).where(schema.Member.name == name)).first()


def get(session: Session, name: str) -> schema.Member:
    member = find(session, name)
    if member is None:
        raise NotFoundError(
            f"No member named '{name}'", hint=f"add one with: nebula member add {name} --role admin"
        )
    return member


def by_slack_id(session: Session, slack_id: str) -> schema.Member | None:
    return session.scalars(select(schema.Member).where(schema.Member.slack_id == slack_id)).first()


def role_of(session: Session, name: str) -> Role | None:
    member = find(session, name)
    return Role(member.role) if member is not None else None


def deciders(session: Session) -> tuple[str, ...]:
    """Everyone who may decide approvals: admins and owners."""
    rows = session.scalars(
        select(schema.Member.name).where(schema.Member.role.in_([Role.ADMIN, Role.OWNER]))
    )
    return tuple(sorted(rows))


def listing(session: Session) -> list[schema.Member]:
    return list(session.scalars(select(schema.Member).order_by(schema.Member.name)))


# -- API tokens ---------------------------------------------------------------------------

_TOKEN = re.compile(r"^nbl_([A-Za-z0-9]{8})_([A-Za-z0-9_-]{20,})$")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(session: Session, clock: Clock, member_name: str) -> str:
    """A new token for ``member_name``; only its hash is stored, so this is the one chance to see it."""
    member = get(session, member_name)
    prefix = secrets.token_hex(4)
    token = f"nbl_{prefix}_{secrets.token_urlsafe(24)}"
    session.add(
        schema.ApiToken(
            member_id=member.id, prefix=prefix, digest=_digest(token), created_at=clock.now()
        )
    )
    session.flush()
    return token


def authenticate(session: Session, clock: Clock, token: str | None) -> schema.Member:
    """The member a bearer token belongs to; ``UnauthorizedError`` for a missing or bad one."""
    if not token:
        raise UnauthorizedError("Missing bearer token")
    match = _TOKEN.match(token.strip())
    row = None
    if match is not None:
        row = session.scalars(
            select(schema.ApiToken).where(schema.ApiToken.prefix == match.group(1))
        ).first()
    # Compare a digest even when no row matched, so timing does not tell which prefixes exist.
    expected = row.digest if row is not None else _digest("nbl_00000000_" + "x" * 32)
    if not hmac.compare_digest(expected, _digest(token.strip())) or row is None:
        raise UnauthorizedError("Invalid bearer token")
    row.last_used_at = clock.now()
    return row.member


def remove(session: Session, name: str) -> schema.Member:
    """Remove a member and their tokens (what they did keeps their name)."""
    member = get(session, name)
    for token in tokens(session, member):
        session.delete(token)
    session.delete(member)
    session.flush()
    return member


def tokens(session: Session, member: schema.Member | None = None) -> list[schema.ApiToken]:
    """API tokens, oldest first (only their hashes are stored: the tokens cannot be shown)."""
    query = select(schema.ApiToken).order_by(schema.ApiToken.id)
    if member is not None:
        query = query.where(schema.ApiToken.member_id == member.id)
    return list(session.scalars(query))


def revoke_token(session: Session, token_id: int) -> schema.ApiToken:
    """Delete a token: requests that bear it get 401 from now on."""
    row = session.get(schema.ApiToken, token_id)
    if row is None:
        raise NotFoundError(f"No token {token_id}", hint="list them with: nebula token list")
    session.delete(row)
    session.flush()
    return row
