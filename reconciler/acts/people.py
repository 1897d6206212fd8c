"""People: who am I, members and their roles, grants, API tokens. Every change is audited
and checked by ``core.rights``: members, grants and another member's tokens take an admin or
an owner; an owner's standing takes an owner; the last owner stays.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session

from reconciler.acts.calls import Call, Document
from reconciler.admin import grants, members, projects, tokens
from reconciler.core import rights
from reconciler.core.states import AdminAction, Role
from reconciler.durations import format_duration, parse_duration
from reconciler.errors import ConfigurationError, ForbiddenError, NotFoundError
from reconciler.requests import approvals
from reconciler.store import schema
from reconciler.views import iso


def _member(m: schema.Member) -> Document:
    return {
        "name": m.name,
        "role": m.role,
        "slack_id": m.slack_id,
        "email": m.email,
        "oidc_subject": m.oidc_subject,
        "created_at": iso(m.created_at),
    }


def _grant(row: schema.GrantRow) -> Document:
    return {
        "id": str(row.id),
        "member": row.member.name,
        "grant": row.kind,
        "project": row.project.slug,
        "environment": row.environment,
        "created_at": iso(row.created_at),
        "created_by": row.created_by,
    }


def _token(row: schema.ApiToken) -> Document:
    return {
        "id": str(row.id),
        "member": row.member.name,
        "role": row.member.role,
        "name": row.name,
        "created_at": iso(row.created_at),
        "expires_at": iso(row.expires_at),
        "last_used_at": iso(row.last_used_at),
    }


def whoami(call: Call) -> Document:
    who = call.who
    token = None
    if who.token is not None:
        with call.ctx.db.reading() as session:
            row = tokens.get(session, who.token)
            token = {
                "id": str(row.id),
                "name": row.name,
                "expires_at": iso(row.expires_at),
                "via": row.via,
            }
    return {
        "member": who.name,
        "role": who.role.value,
        "grants": [
            {"grant": g.kind.value, "project": g.project, "environment": g.environment}
            for g in who.grants
        ],
        "token": token,
        "server": None,
        "mode": "local" if who.local else "remote",
    }


# -- members --------------------------------------------------------------------------------


def list_members(call: Call) -> Document:
    with call.ctx.db.reading() as session:
        return {"members": [_member(m) for m in members.listing(session)]}


def _identity(call: Call) -> members.Identity:
    return members.Identity(
        slack_id=call.maybe("slack_id"),
        email=call.maybe("email"),
        oidc_subject=call.maybe("oidc_subject"),
    )


def _change_role(call: Call, session: Session, name: str, role: Role) -> Document:
    existing = members.find(session, name)
    old = Role(existing.role) if existing is not None else None
    identity = _identity(call)
    rights.check_role_change(call.who, name, old, role, members.owners(session))
    changes = members.identity_changes(existing, identity) if existing is not None else []
    if changes and old is Role.ADMIN and name != call.who.name:
        # Who an admin is decides who approves as them: one admin re-pointing another's Slack
        # id could approve their own deploy as the other.
        rights.require_owner(call.who, f"change who {name} is, an admin ({', '.join(changes)})")
    member = members.add(session, call.ctx.clock, name, role, identity)
    approvals.refresh_waiting(session, call.ctx.clock)
    if old is None:
        call.audit(session, AdminAction.MEMBER_ADD, f"member {name}", f"Added {name} as {role}")
    else:
        said = [f"Role of {name}: {old} -> {role}"] if old is not role or not changes else []
        said += changes if said else [f"Identity of {name}: {changes[0]}", *changes[1:]]
        call.audit(session, AdminAction.MEMBER_ROLE, f"member {name}", "; ".join(said))
    return {"member": _member(member)}


def add_member(call: Call) -> Document:
    """A new member, or an existing one's role (``nebula member add`` has always done both)."""
    role = members.parse_role(call.text("role"))
    with call.ctx.db.transaction() as session:
        data = _change_role(call, session, call.text("name"), role)
    call.wake()
    return data


def set_member(call: Call) -> Document:
    name = call.param("name")
    with call.ctx.db.transaction() as session:
        current = members.get(session, name)
        role = members.parse_role(call.maybe("role") or current.role)
        data = _change_role(call, session, name, role)
    call.wake()
    return data


def remove_member(call: Call) -> Document:
    name = call.param("name")
    with call.ctx.db.transaction() as session:
        member = members.get(session, name)
        role = Role(member.role)
        rights.check_role_change(call.who, name, role, None, members.owners(session))
        members.remove(session, name)
        approvals.refresh_waiting(session, call.ctx.clock)
        text = f"Removed {name} ({role}), their API tokens and grants"
        call.audit(session, AdminAction.MEMBER_REMOVE, f"member {name}", text)
    return {"member": {"name": name, "role": role.value}, "removed": True}


# -- grants ---------------------------------------------------------------------------------


def list_grants(call: Call) -> Document:
    name = call.option("member")
    with call.ctx.db.reading() as session:
        member = members.get(session, name) if name is not None else None
        return {"grants": [_grant(g) for g in grants.rows(session, member)]}


def _grant_args(call: Call, session: Session, source: dict[str, Any]) -> tuple[Any, ...]:
    rights.require_admin(call.who, "change grants")
    member = members.get(session, str(source.get("member") or ""))
    kind = grants.parse_kind(str(source.get("grant") or ""))
    project = projects.get(session, str(source.get("project") or ""))
    environment = source.get("environment") or None
    return member, kind, project, environment


def add_grant(call: Call) -> Document:
    with call.ctx.db.transaction() as session:
        member, kind, project, environment = _grant_args(call, session, dict(call.body))
        row = grants.add(session, call.ctx.clock, member, kind, project, environment, call.who.name)
        where = project.slug if environment is None else f"{project.slug}/{environment}"
        text = f"Granted {kind.value} in {where} to {member.name}"
        call.audit(session, AdminAction.GRANT_ADD, f"member {member.name}", text)
        approvals.refresh_waiting(session, call.ctx.clock)
        data = {"grant": _grant(row)}
    call.wake()
    return data


def remove_grant(call: Call) -> Document:
    with call.ctx.db.transaction() as session:
        member, kind, project, environment = _grant_args(call, session, dict(call.query))
        grants.remove(session, member, kind, project, environment)
        where = project.slug if environment is None else f"{project.slug}/{environment}"
        text = f"Removed the {kind.value} grant in {where} from {member.name}"
        call.audit(session, AdminAction.GRANT_REMOVE, f"member {member.name}", text)
        approvals.refresh_waiting(session, call.ctx.clock)
    return {
        "grant": {
            "member": member.name,
            "grant": kind.value,
            "project": project.slug,
            "environment": environment,
        },
        "removed": True,
    }


# -- tokens ---------------------------------------------------------------------------------


def list_tokens(call: Call) -> Document:
    """A member's own tokens; everyone's (or another member's) for an admin or owner."""
    who = call.who
    name = call.option("member")
    with call.ctx.db.reading() as session:
        if name is not None:
            rights.check_own_or_admin(who, name, "list the tokens")
        elif not who.role.can_decide:
            name = who.name
        member = members.get(session, name) if name is not None else None
        return {"tokens": [_token(t) for t in tokens.listing(session, member)]}


def _lifetime(text: str | None) -> timedelta | None:
    if text is None:
        return None
    try:
        return parse_duration(text, setting="--expires")
    except OverflowError:
        raise ConfigurationError(f"--expires {text} is further away than time goes") from None


def _within_caller(session: Session, call: Call, lifetime: timedelta | None) -> timedelta | None:
    """A token made with a token lives no longer than it: else an hour's token, leaked, would
    make itself a permanent one."""
    if call.who.token is None:
        return lifetime
    ends = tokens.get(session, call.who.token).expires_at
    if ends is None:
        return lifetime
    left = ends - call.ctx.clock.now()
    if lifetime is None:
        return left
    if lifetime > left:
        raise ForbiddenError(
            f"a token cannot outlive the token that makes it: token {call.who.token} expires "
            f"{iso(ends)}",
            hint=f"ask for --expires {format_duration(left)} or less (or sign in with a token "
            "that does not expire)",
        )
    return lifetime


def create_token(call: Call) -> Document:
    """The caller's own token: a token is its member, so making one for someone else would be
    acting as them (and deciding their approvals). Locally, ``--as NAME`` is the caller."""
    who = call.who
    lifetime = _lifetime(call.maybe("expires"))
    with call.ctx.db.transaction() as session:
        member = members.find(session, who.name)
        if member is None:
            raise NotFoundError(
                f"No member named {who.name}: a token belongs to a member",
                hint="name the member: nebula token create --as NAME",
            )
        lifetime = _within_caller(session, call, lifetime)
        row, text = tokens.create(
            session, call.ctx.clock, member, name=call.maybe("name"), lifetime=lifetime
        )
        extra = f" ({row.name})" if row.name else ""
        extra += f", expires {iso(row.expires_at)}" if row.expires_at else ""
        message = f"API token {row.id}{extra} created for {member.name}"
        call.audit(session, AdminAction.TOKEN_CREATE, f"token {row.id}", message)
        data = {"member": member.name, "token": text, **_token(row)}
    return data


def revoke_token(call: Call) -> Document:
    token_id = call.id("token_id", "token")
    with call.ctx.db.transaction() as session:
        row = tokens.get(session, token_id)
        owner = row.member.name
        rights.check_own_or_admin(call.who, owner, "revoke the tokens", Role(row.member.role))
        tokens.revoke(session, row)
        message = f"API token {token_id} of {owner} revoked"
        call.audit(session, AdminAction.TOKEN_REVOKE, f"token {token_id}", message)
    return {"token": {"id": str(token_id), "member": owner, "revoked": True}}
