"""Single sign-on's records: the sign-ins under way, who a verified identity is among the
members, and the session a sign-in ends in.

A sign-in under way is a row, so any replica can take the provider's answer. Its handle (held
by the browser's cookie or the command line) is stored as a digest and its secrets (nonce,
PKCE verifier, device code) encrypted; a redirect's answer is taken once (``forget`` deletes
the row, and only the request that deleted it goes on), so a replayed callback is refused.

The person is the member whose ``--email`` is the verified ``email`` claim, else the one whose
``--oidc-subject`` is ``sub`` (behaviour.md "Single sign-on"); someone unknown is refused, or,
with ``NEBULA_OIDC_DEFAULT_ROLE``, added as a member with that role (audited).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from reconciler.admin import auditing, members, tokens
from reconciler.clock import Clock
from reconciler.core.states import AdminAction, Role, SignInKind
from reconciler.errors import ForbiddenError, SignInRefusedError
from reconciler.sso.authorizing import secret
from reconciler.sso.idtokens import Identity
from reconciler.store import schema
from reconciler.store.crypto import Vault

LIFETIME = timedelta(minutes=10)  # to sign in at the provider, or to approve a device
_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Pending:
    """A sign-in under way, as the provider's answer is checked against it."""

    id: int
    kind: SignInKind
    state: str | None
    nonce: str | None
    verifier: str | None
    device_code: str | None
    redirect_uri: str | None
    next_path: str | None
    interval: int
    next_poll_at: datetime | None


def _digest(handle: str) -> str:
    return hashlib.sha256(handle.encode()).hexdigest()


def remember(
    session: Session,
    clock: Clock,
    vault: Vault,
    kind: SignInKind,
    *,
    state: str | None = None,
    nonce: str | None = None,
    verifier: str | None = None,
    device_code: str | None = None,
    redirect_uri: str | None = None,
    next_path: str | None = None,
    interval: int = 5,
    lifetime: timedelta = LIFETIME,
) -> str:
    """A new sign-in under way; its handle, which only its browser or command line holds."""
    now = clock.now()
    handle = secret()
    hidden = {"nonce": nonce, "verifier": verifier, "device_code": device_code}
    session.add(
        schema.SignInRow(
            handle=_digest(handle),
            kind=kind.value,
            state=state,
            secrets=vault.encrypt(json.dumps(hidden)),
            redirect_uri=redirect_uri,
            next_path=next_path,
            interval=interval,
            next_poll_at=None,
            created_at=now,
            expires_at=now + lifetime,
        )
    )
    # Sign-ins nobody finished are forgotten as new ones begin.
    session.execute(delete(schema.SignInRow).where(schema.SignInRow.expires_at <= now))
    session.flush()
    return handle


def find(session: Session, clock: Clock, vault: Vault, handle: str | None) -> Pending | None:
    """The sign-in ``handle`` names, unless there is none (finished, expired, never begun)."""
    if not handle or len(handle) > 200:
        return None
    row = session.scalars(
        select(schema.SignInRow).where(schema.SignInRow.handle == _digest(handle))
    ).first()
    if row is None or row.expires_at <= clock.now():
        return None
    hidden = json.loads(vault.decrypt(row.secrets))
    return Pending(
        id=row.id,
        kind=SignInKind(row.kind),
        state=row.state,
        nonce=hidden.get("nonce"),
        verifier=hidden.get("verifier"),
        device_code=hidden.get("device_code"),
        redirect_uri=row.redirect_uri,
        next_path=row.next_path,
        interval=row.interval,
        next_poll_at=row.next_poll_at,
    )


def forget(session: Session, pending: Pending) -> bool:
    """Ends a sign-in under way; False when another request ended it first (a replay)."""
    done = session.execute(delete(schema.SignInRow).where(schema.SignInRow.id == pending.id))
    return bool(getattr(done, "rowcount", 0))


def postpone(session: Session, pending: Pending, at: datetime, interval: int) -> None:
    """A device's next poll of the provider: not before ``at``."""
    row = session.get(schema.SignInRow, pending.id)
    if row is not None:
        row.next_poll_at = at
        row.interval = interval


# -- who signed in ---------------------------------------------------------------------------


def member_for(
    session: Session, clock: Clock, identity: Identity, default_role: Role | None
) -> schema.Member:
    """The member ``identity`` is, perhaps new; refusals name what is missing."""
    email = identity.email.lower() if identity.email else None
    if email is not None and identity.email_verified:
        found = session.scalars(
            select(schema.Member).where(schema.Member.email.in_({email, identity.email}))
        ).first()
        if found is not None:
            return found
    found = session.scalars(
        select(schema.Member).where(schema.Member.oidc_subject == identity.subject)
    ).first()
    if found is not None:
        return found
    if email is not None and not identity.email_verified:
        raise SignInRefusedError(
            f"Sign-in refused: the sign-in provider has not verified the e-mail address {email}",
            f"email_verified is not true for {email} (subject {identity.subject[:100]})",
            hint="verify the address with your organization's sign-in provider, then sign in "
            "again (or ask an admin: nebula member set NAME --oidc-subject SUBJECT)",
        )
    who = email or identity.subject
    if default_role is None:
        raise ForbiddenError(
            f"no member for {who}: ask an admin to add you",
            hint=f"an admin adds you with: nebula member add NAME --role member --email {who}"
            if email
            else "an admin adds you with: nebula member add NAME --role member "
            f"--oidc-subject {who}",
        )
    return _added(session, clock, identity, email, default_role)


def _added(
    session: Session, clock: Clock, identity: Identity, email: str | None, role: Role
) -> schema.Member:
    base = _NAME_CHARACTERS.sub("-", (email or identity.subject).split("@")[0])[:90].strip("-.")
    name = base if base and base[0].isalnum() else f"sso-{base or 'member'}"
    suffix = 1
    while members.find(session, name) is not None or name == "local-admin":
        suffix += 1
        name = f"{base}-{suffix}"
    identity_of = members.Identity(email=email, oidc_subject=identity.subject)
    member = members.add(session, clock, name, role, identity_of)
    auditing.record(
        session,
        clock,
        AdminAction.MEMBER_ADD,
        name,
        f"{name} signed in with single sign-on for the first time ({email or identity.subject}):"
        f" added as {role.value} (NEBULA_OIDC_DEFAULT_ROLE)",
        actor=name,
    )
    return member


def admin_by_groups(identity: Identity, admin_groups: str) -> bool:
    wanted = {g.strip() for g in admin_groups.split(",") if g.strip()}
    return bool(wanted & set(identity.groups))


def open_session(
    session: Session, clock: Clock, member: schema.Member, lifetime: timedelta, *, admin: bool
) -> tuple[schema.ApiToken, str]:
    """The session a sign-in ends in: a token of ``member``'s for ``lifetime``."""
    return tokens.create(
        session,
        clock,
        member,
        name=tokens.VIA_SSO,
        lifetime=lifetime,
        via=tokens.VIA_SSO,
        admin_for_session=admin,
    )
