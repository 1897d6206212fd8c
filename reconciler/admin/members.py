"""Organization members: who they are (name, Slack id, e-mail, OIDC subject) and their role.

Who may change a member is ``core.rights``'s decision; these functions record what was
decided. A member's API tokens are ``tokens``'s, their grants ``grants``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from reconciler.clock import Clock
from reconciler.core.rights import LOCAL_ADMIN_NAME, PROJECT_REQUESTER
from reconciler.core.rights import project_actor as project_actor
from reconciler.core.rights import shown_actor as shown_actor
from reconciler.core.states import Role
from reconciler.errors import ConfigurationError, ConflictError, NotFoundError, shown
from reconciler.store import schema

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}\Z")  # \Z: "$" would take "alice\n"
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,189}\Z")
ROLES = ", ".join(r.value for r in Role)


@dataclass(frozen=True)
class Identity:
    """What else names a member than their name: optional, each unique among members."""

    slack_id: str | None = None
    email: str | None = None
    oidc_subject: str | None = None


def parse_role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise ConfigurationError(
            f"--role {shown(role)} is not a role", hint=f"use one of: {ROLES}"
        ) from None


def check_name(name: str) -> None:
    reserved = name.startswith(PROJECT_REQUESTER) or name == LOCAL_ADMIN_NAME
    if not _NAME.match(name) or reserved:
        raise ConfigurationError(
            f"{shown(name)} is not a valid member name",
            hint="use letters, digits, '.', '_', '@' or '-' "
            f"({LOCAL_ADMIN_NAME} is the store's operator, not a member)",
        )


def _check_identity(session: Session, identity: Identity, member: schema.Member | None) -> None:
    if identity.email is not None and not _EMAIL.match(identity.email):
        raise ConfigurationError(f"--email {shown(identity.email)} is not an e-mail address")
    for column, value, label in (
        (schema.Member.slack_id, identity.slack_id, "Slack user"),
        (schema.Member.email, identity.email, "E-mail address"),
        (schema.Member.oidc_subject, identity.oidc_subject, "OIDC subject"),
    ):
        if value is None:
            continue
        other = session.scalars(select(schema.Member).where(column == value)).first()
        if other is not None and other is not member:
            raise ConflictError(f"{label} {value} is already mapped to another member")


def add(
    session: Session, clock: Clock, name: str, role: Role, identity: Identity = Identity()
) -> schema.Member:
    """A new member, or (``nebula member add`` of a name that exists) their role and identity
    changed."""
    check_name(name)
    existing = find(session, name)
    _check_identity(session, identity, existing)
    if existing is not None:
        set_role(existing, role, identity)
        return existing
    member = schema.Member(
        name=name,
        role=role.value,
        slack_id=identity.slack_id,
        email=identity.email,
        oidc_subject=identity.oidc_subject,
        created_at=clock.now(),
    )
    session.add(member)
    session.flush()
    return member


def identity_changes(member: schema.Member, identity: Identity) -> list[str]:
    """What ``identity`` would change of who ``member`` is, as the audit words it: re-pointing
    a Slack id or a sign-in lets another person act as them, so it is never silent."""
    changes = []
    for label, old, new in (
        ("Slack id", member.slack_id, identity.slack_id),
        ("e-mail", member.email, identity.email),
        ("OIDC subject", member.oidc_subject, identity.oidc_subject),
    ):
        if new is not None and new != old:
            changes.append(f"{label} {old or 'none'} -> {new}")
    return changes


def set_role(member: schema.Member, role: Role, identity: Identity = Identity()) -> None:
    member.role = role.value
    if identity.slack_id is not None:
        member.slack_id = identity.slack_id
    if identity.email is not None:
        member.email = identity.email
    if identity.oidc_subject is not None:
        member.oidc_subject = identity.oidc_subject


def find(session: Session, name: str) -> schema.Member | None:
    return session.scalars(select(schema.Member).where(schema.Member.name == name)).first()


def get(session: Session, name: str) -> schema.Member:
    member = find(session, name)
    if member is None:
        raise NotFoundError(
            f"No member named {shown(name)}",
            hint=f"add one with: nebula member add {shown(name, quote=False)} --role admin",
        )
    return member


def by_slack_id(session: Session, slack_id: str) -> schema.Member | None:
    return session.scalars(select(schema.Member).where(schema.Member.slack_id == slack_id)).first()


def role_of(session: Session, name: str) -> Role | None:
    member = find(session, name)
    return Role(member.role) if member is not None else None


def owners(session: Session) -> int:
    counted = session.scalar(
        select(func.count()).select_from(schema.Member).where(schema.Member.role == Role.OWNER)
    )
    return int(counted or 0)


def listing(session: Session) -> list[schema.Member]:
    return list(session.scalars(select(schema.Member).order_by(schema.Member.name)))


def remove(session: Session, name: str) -> schema.Member:
    """Remove a member with their tokens, grants and what they read of their inbox (what
    they did keeps their name; a member added later under it starts with nothing read)."""
    member = get(session, name)
    session.execute(delete(schema.ApiToken).where(schema.ApiToken.member_id == member.id))
    session.execute(delete(schema.GrantRow).where(schema.GrantRow.member_id == member.id))
    session.execute(delete(schema.InboxRead).where(schema.InboxRead.member == member.name))
    session.delete(member)
    session.flush()
    return member
