"""Who may do what (behaviour.md "People, roles and grants"), decided by ``core.rights`` for
every path: every role against every grant, protected and not, with and without grants, and
the refusals' exact words."""

from __future__ import annotations

import pytest

from reconciler.core import rights
from reconciler.core.rights import LOCAL_ADMIN, Grant, Principal, Where
from reconciler.core.states import GrantKind, Role
from reconciler.errors import ConflictError, ForbiddenError

PRODUCTION = Where("shop", "production", protected=True)
STAGING = Where("shop", "staging", protected=False)
OTHER = Where("billing", "production", protected=True)


def who(role: Role, *grants: Grant) -> Principal:
    return Principal("bob", role, grants)


# (role, grant kind, where, grants held) -> holds?
CASES = [
    # Owners and admins hold both grants everywhere.
    *[(role, kind, where, (), True) for role in (Role.OWNER, Role.ADMIN)
      for kind in GrantKind for where in (PRODUCTION, STAGING)],
    # A member deploys in unprotected environments by default, and nothing else ...
    (Role.MEMBER, GrantKind.DEPLOY, STAGING, (), True),
    (Role.MEMBER, GrantKind.DEPLOY, PRODUCTION, (), False),
    (Role.MEMBER, GrantKind.APPROVE, STAGING, (), False),
    (Role.MEMBER, GrantKind.APPROVE, PRODUCTION, (), False),
    # ... unless granted: in that environment, or anywhere in the project.
    (Role.MEMBER, GrantKind.DEPLOY, PRODUCTION, (Grant(GrantKind.DEPLOY, "shop", "production"),), True),
    (Role.MEMBER, GrantKind.APPROVE, PRODUCTION, (Grant(GrantKind.APPROVE, "shop"),), True),
    (Role.MEMBER, GrantKind.APPROVE, STAGING, (Grant(GrantKind.APPROVE, "shop", "production"),), False),
    (Role.MEMBER, GrantKind.APPROVE, OTHER, (Grant(GrantKind.APPROVE, "shop"),), False),
    (Role.MEMBER, GrantKind.APPROVE, PRODUCTION, (Grant(GrantKind.DEPLOY, "shop"),), False),
    # A viewer holds nothing, whatever was granted.
    *[(Role.VIEWER, kind, where, (Grant(kind, "shop"),), False)
      for kind in GrantKind for where in (PRODUCTION, STAGING)],
]  # fmt: skip


@pytest.mark.parametrize(("role", "kind", "where", "grants", "expected"), CASES)
def test_who_holds_a_grant(
    role: Role, kind: GrantKind, where: Where, grants: tuple[Grant, ...], expected: bool
) -> None:
    assert rights.holds(who(role, *grants), kind, where) is expected


def test_a_refusal_names_what_is_missing() -> None:
    with pytest.raises(ForbiddenError) as refused:
        rights.require(who(Role.MEMBER), GrantKind.APPROVE, PRODUCTION)
    assert refused.value.message == (
        "bob may not approve in shop/production: needs the approve grant or the admin role"
    )
    assert refused.value.hint == (
        "an admin can grant it: nebula grant add bob approve --project shop --env production"
    )
    with pytest.raises(ForbiddenError) as viewer:
        rights.require(who(Role.VIEWER), GrantKind.DEPLOY, STAGING, verb="roll back")
    assert viewer.value.message == (
        "bob may not roll back in shop/staging: needs the deploy grant or the admin role "
        "(bob is a viewer)"
    )


@pytest.mark.parametrize("role", list(Role))
def test_administration_takes_an_admin_or_an_owner(role: Role) -> None:
    if role.can_decide:
        rights.require_admin(who(role), "set policies")
        return
    with pytest.raises(ForbiddenError) as refused:
        rights.require_admin(who(role), "set policies")
    article = "a" if role in (Role.MEMBER, Role.VIEWER) else "an"
    assert refused.value.message == (
        f"bob may not set policies: needs the admin role (bob is {article} {role})"
    )


# (actor's role, member's role now (None: new), wanted (None: removed), owners) -> refusal
ROLE_CHANGES = [
    (Role.ADMIN, None, Role.MEMBER, 1, None),
    (Role.ADMIN, Role.MEMBER, Role.ADMIN, 1, None),
    (Role.ADMIN, Role.ADMIN, None, 1, None),
    (Role.ADMIN, None, Role.OWNER, 1, "bob may not make carol an owner: needs the owner role (bob is an admin)"),
    (Role.ADMIN, Role.OWNER, Role.ADMIN, 2, "bob may not change the role of carol, an owner: needs the owner role (bob is an admin)"),
    (Role.ADMIN, Role.OWNER, None, 2, "bob may not remove carol, an owner: needs the owner role (bob is an admin)"),
    (Role.MEMBER, None, Role.VIEWER, 1, "bob may not add carol as viewer: needs the admin role (bob is a member)"),
    (Role.MEMBER, Role.MEMBER, Role.OWNER, 1, "bob may not change the role of carol: needs the admin role (bob is a member)"),
    (Role.OWNER, None, Role.OWNER, 1, None),
    (Role.OWNER, Role.OWNER, Role.ADMIN, 2, None),
    (Role.OWNER, Role.OWNER, None, 2, None),
]  # fmt: skip


@pytest.mark.parametrize(("actor", "old", "new", "owners", "refusal"), ROLE_CHANGES)
def test_changing_a_role(
    actor: Role, old: Role | None, new: Role | None, owners: int, refusal: str | None
) -> None:
    if refusal is None:
        rights.check_role_change(who(actor), "carol", old, new, owners)
        return
    with pytest.raises(ForbiddenError) as refused:
        rights.check_role_change(who(actor), "carol", old, new, owners)
    assert refused.value.message == refusal


@pytest.mark.parametrize("new", [Role.ADMIN, None])
def test_the_last_owner_stays(new: Role | None) -> None:
    with pytest.raises(ConflictError) as refused:
        rights.check_role_change(LOCAL_ADMIN, "olga", Role.OWNER, new, owners=1)
    doing = "removed" if new is None else "demoted"
    assert refused.value.message == (
        f"olga is the last owner and cannot be {doing}: an organization always keeps one owner"
    )


def test_own_tokens_or_an_admin() -> None:
    rights.check_own_or_admin(who(Role.VIEWER), "bob", "revoke the tokens")
    rights.check_own_or_admin(who(Role.ADMIN), "alice", "revoke the tokens")
    with pytest.raises(ForbiddenError) as refused:
        rights.check_own_or_admin(who(Role.MEMBER), "alice", "revoke the tokens")
    assert refused.value.message == (
        "bob may not revoke the tokens of alice: needs the admin role (bob is a member)"
    )
    rights.check_own_or_admin(who(Role.OWNER), "olga", "revoke the tokens", Role.OWNER)
    with pytest.raises(ForbiddenError) as refused:
        rights.check_own_or_admin(who(Role.ADMIN), "olga", "revoke the tokens", Role.OWNER)
    assert refused.value.message == (
        "bob may not revoke the tokens of olga, an owner: needs the owner role (bob is an admin)"
    )


def test_the_operator_of_the_store_holds_every_right() -> None:
    assert LOCAL_ADMIN.name == "local-admin" and LOCAL_ADMIN.local
    for kind in GrantKind:
        assert rights.holds(LOCAL_ADMIN, kind, PRODUCTION)
    rights.require_owner(LOCAL_ADMIN, "make alice an owner")
