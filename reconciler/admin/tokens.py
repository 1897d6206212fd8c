"""API tokens: shown once, stored hashed (sha256, compared in constant time), named, and
refused after their expiry; each use is recorded (at most once a minute, so reads stay reads).

A token carries no rights of its own: whoever bears it acts as its member, with the role
and grants that member has at the moment of each request. A single sign-on session is a token
too (``via`` "sso", named "sso", for ``NEBULA_SESSION_TTL``): the command line keeps it like
any login, the page in its cookie; only its lifetime and, when the provider's groups said so,
admin rights for that session (``admin_for_session``) set it apart.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.errors import ConfigurationError, NotFoundError, UnauthorizedError
from reconciler.store import schema

_TOKEN = re.compile(r"^nbl_([A-Za-z0-9]{8})_([A-Za-z0-9_-]{20,})$")
MAX_NAME = 100
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # a name is shown in tables: text, no controls
USE_RECORDED_EVERY = timedelta(minutes=1)
VIA_SSO = "sso"
SIGN_IN_AGAIN = "nebula login URL --sso (or, on the status page, /login)"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(
    session: Session,
    clock: Clock,
    member: schema.Member,
    *,
    name: str | None = None,
    lifetime: timedelta | None = None,
    via: str | None = None,
    admin_for_session: bool = False,
) -> tuple[schema.ApiToken, str]:
    """A new token for ``member`` and its text: only its hash is stored, so this is the one
    chance to see it."""
    if name is not None and (not name.strip() or len(name) > MAX_NAME or _CONTROL.search(name)):
        raise ConfigurationError(
            f"--name must be printable text of 1 to {MAX_NAME} characters", hint="e.g. --name ci"
        )
    if lifetime is not None and lifetime <= timedelta(0):
        raise ConfigurationError(
            "--expires must be a duration after now", hint="e.g. --expires 30d"
        )
    prefix = secrets.token_hex(4)
    token = f"nbl_{prefix}_{secrets.token_urlsafe(24)}"
    now = clock.now()
    row = schema.ApiToken(
        member_id=member.id,
        prefix=prefix,
        digest=_digest(token),
        name=name,
        created_at=now,
        expires_at=now + lifetime if lifetime is not None else None,
        via=via,
        admin_for_session=admin_for_session,
    )
    session.add(row)
    session.flush()
    return row, token


def verify(session: Session, clock: Clock, token: str | None) -> schema.ApiToken:
    """The token's row, changing nothing (a read-only session may ask: the web's admission
    does, before a write's body is read); ``UnauthorizedError`` for a missing, bad or expired
    one."""
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
    if row.expires_at is not None and row.expires_at <= clock.now():
        if row.via == VIA_SSO:
            raise UnauthorizedError("session expired: sign in again", hint=SIGN_IN_AGAIN)
        raise UnauthorizedError("token expired")
    return row


def stale_use(row: schema.ApiToken, now: datetime) -> bool:
    """Whether this use should be recorded: never used, or last recorded a while ago."""
    return row.last_used_at is None or now - row.last_used_at >= USE_RECORDED_EVERY


def record_use(session: Session, clock: Clock, token_id: int) -> None:
    row = session.get(schema.ApiToken, token_id)
    if row is not None:
        row.last_used_at = clock.now()


def listing(session: Session, member: schema.Member | None = None) -> list[schema.ApiToken]:
    """API tokens, oldest first (only their hashes are stored: the tokens cannot be shown)."""
    query = select(schema.ApiToken).order_by(schema.ApiToken.id)
    if member is not None:
        query = query.where(schema.ApiToken.member_id == member.id)
    return list(session.scalars(query))


def get(session: Session, token_id: int) -> schema.ApiToken:
    row = session.get(schema.ApiToken, token_id)
    if row is None:
        raise NotFoundError(f"No token {token_id}", hint="list them with: nebula token list")
    return row


def revoke(session: Session, row: schema.ApiToken) -> None:
    """Delete a token: requests that bear it get 401 from now on."""
    session.delete(row)
    session.flush()
